import { loadConfig } from '../../src/config/load-config.js';
import { createLogger } from '../../src/logger.js';
import { createPublisher } from '../../src/producer/publisher.js';
import { declareOnce } from '../../src/topology/connect-topology.js';
import { PublishTap } from '../broker-tap.js';
import type { BenchContext, ChartPanel, Scenario, Table } from '../context.js';
import { withScope } from '../scope.js';
import { fmt } from '../stats.js';
import { CROWD_SHAPES, crowdRun, crowdTable, QUIET_GOAL_S, runsAlone, type CrowdRun } from './crowd.js';
import {
  laneOfTarget,
  LANES,
  publishTo,
  startConsumers,
  startTarget,
  startTargetInLane,
  waitUntil,
  workerPublishes,
  type Consumer,
  type Target,
} from './fair-targets.js';
import { runIsolation, type IsolationRun } from './isolation.js';
import { OUTAGE_SHAPES, outageRun, outageTable, type OutageRun } from './outage.js';

export interface BusyRun {
  name: string;
  /** Seconds from U's publish to its last delivery (undefined: not all within the limit). */
  coldDone: number | undefined;
  /** Seconds from the first publish to T's last delivery. */
  busyDrained: number | undefined;
  publishesPerCallback: number | undefined;
}

/** Scenario 1: busy healthy T (answers after 300 ms, deep backlog), then cold U with a few callbacks. */
async function busyRun(
  ctx: BenchContext,
  name: string,
  consumer: Consumer,
  sharedLane: boolean,
  sizes: { busy: number; cold: number; limitMs: number },
): Promise<BusyRun> {
  return withScope(ctx.url, async (scope) => {
    const busy = await startTarget(scope, () => ({ status: 200, delayMs: 300 }));
    const cold = await startTargetInLane(scope, busy, sharedLane, () => ({ status: 200, delayMs: 0 }));
    const prefix = scope.prefix('fair');
    const base = { PREFETCH: '50' };
    // Every process that declares the topology must agree on LANES.
    const lanes = consumer.kind === 'relay' ? (consumer.env.LANES ?? String(LANES)) : String(LANES);
    const publisherConfig = loadConfig({ AMQP_URL: ctx.url, TOPOLOGY_PREFIX: prefix, LOG_LEVEL: 'silent', LANES: lanes });
    // Publishers declare nothing: the topology step first, as a deployment runs it.
    await declareOnce(publisherConfig, createLogger('silent'));
    const publisher = scope.add(createPublisher(publisherConfig, createLogger('silent')));
    // The backlog is queued before any consumer runs, as in the setup.
    await publishTo(publisher, busy, 't', sizes.busy);
    const started = Date.now();
    const ports = await startConsumers(ctx, scope, prefix, consumer, base);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const coldPublished = Date.now();
    await publishTo(publisher, cold, 'u', sizes.cold);
    const coldOk = await waitUntil(() => cold.delivered.size === sizes.cold, sizes.limitMs, started);
    const busyOk = await waitUntil(() => busy.delivered.size === sizes.busy, sizes.limitMs, started);
    const last = (target: Target): number => Math.max(...target.delivered.values());
    const publishes = consumer.kind === 'relay' ? sizes.busy + sizes.cold + (await workerPublishes(ports)) : undefined;
    const run = {
      name,
      coldDone: coldOk ? (last(cold) - coldPublished) / 1000 : undefined,
      busyDrained: busyOk ? (last(busy) - started) / 1000 : undefined,
      publishesPerCallback: publishes === undefined ? undefined : publishes / (sizes.busy + sizes.cold),
    };
    ctx.log(`fairness busy: ${name}: U ${fmt(run.coldDone ?? NaN, 2)} s, T ${fmt(run.busyDrained ?? NaN, 2)} s`);
    return run;
  });
}

export interface SickRun {
  name: string;
  /** Seconds from B and C's publish to C's / B's last delivery, and from A's publish to A's last dead-lettering. */
  healthyDone: number | undefined;
  flakyDone: number | undefined;
  flakyDelivered: number;
  hangingDead: number;
  hangingDone: number | undefined;
  hangingRequests: number;
  /** 1.5 × (attempts × timeout + Σ delays) + 10 s. */
  bound: number;
  publishesPerCallback: number | undefined;
}

/** Scenario 2: A hangs past HTTP_TIMEOUT with a backlog; 8 s later B (500 then 200) and healthy C. */
async function sickRun(
  ctx: BenchContext,
  name: string,
  env: Record<string, string>,
  sizes: { hanging: number; others: number; limitMs: number; lagMs: number },
): Promise<SickRun> {
  return withScope(ctx.url, async (scope) => {
    const hanging = await startTarget(scope, () => null);
    const flaky = await startTargetInLane(scope, hanging, false, (_path, nth) => ({ status: nth === 1 ? 500 : 200, delayMs: 0 }));
    let healthy = await startTargetInLane(scope, hanging, false, () => ({ status: 200, delayMs: 0 }));
    while (laneOfTarget(healthy) === laneOfTarget(flaky))
      healthy = await startTargetInLane(scope, hanging, false, () => ({ status: 200, delayMs: 0 }));
    const prefix = scope.prefix('sick');
    const settings = { PREFETCH: '50', HTTP_TIMEOUT: '5s', RETRY_SCHEDULE: '1s,2s', MAX_ATTEMPTS: '3', ...env };
    const ports = await startConsumers(ctx, scope, prefix, { kind: 'relay', workers: 1, env: settings }, {});
    const publisherConfig = loadConfig({ AMQP_URL: ctx.url, TOPOLOGY_PREFIX: prefix, LOG_LEVEL: 'silent', LANES: String(LANES) });
    await declareOnce(publisherConfig, createLogger('silent'));
    const publisher = scope.add(createPublisher(publisherConfig, createLogger('silent')));
    const started = Date.now();
    await publishTo(publisher, hanging, 'a', sizes.hanging);
    await new Promise((resolve) => setTimeout(resolve, sizes.lagMs));
    const othersPublished = Date.now();
    await publishTo(publisher, flaky, 'b', sizes.others);
    await publishTo(publisher, healthy, 'c', sizes.others);
    let deadCount = 0;
    let deadAt: number | undefined;
    const countDead = async (): Promise<void> => {
      const text = await (await fetch(`http://127.0.0.1:${ports[0]}/metrics`)).text();
      deadCount = Number(/^callback_relay_callbacks_total\{outcome="dead",reason="exhausted"\} (\d+)/m.exec(text)?.[1] ?? 0);
      if (deadCount >= sizes.hanging && deadAt === undefined) deadAt = Date.now();
    };
    while (
      Date.now() - started < sizes.limitMs &&
      (deadCount < sizes.hanging || flaky.delivered.size < sizes.others || healthy.delivered.size < sizes.others)
    ) {
      await countDead();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await countDead();
    const last = (target: Target, n: number): number | undefined =>
      target.delivered.size === n ? (Math.max(...target.delivered.values()) - othersPublished) / 1000 : undefined;
    const callbacks = sizes.hanging + 2 * sizes.others;
    const run: SickRun = {
      name,
      healthyDone: last(healthy, sizes.others),
      flakyDone: last(flaky, sizes.others),
      flakyDelivered: flaky.delivered.size,
      hangingDead: deadCount,
      hangingDone: deadAt === undefined ? undefined : (deadAt - started) / 1000,
      hangingRequests: hanging.requests,
      bound: 1.5 * (3 * 5 + 1 + 2) + 10,
      publishesPerCallback: (callbacks + (await workerPublishes(ports))) / callbacks,
    };
    ctx.log(
      `fairness sick: ${name}: C ${fmt(run.healthyDone ?? NaN, 2)} s, B ${fmt(run.flakyDone ?? NaN, 2)} s, A dead ${run.hangingDead} in ${fmt(run.hangingDone ?? NaN, 1)} s`,
    );
    return run;
  });
}

const LEGACY_SHAPES = [
  { name: 'busy', long: false },
  { name: 'sick', long: false },
  { name: 'twenty', long: false },
];
const ALL_SHAPES: Array<{ name: string; long: boolean }> = [...LEGACY_SHAPES, ...OUTAGE_SHAPES, ...CROWD_SHAPES];

/**
 * The shapes a run covers. No `--shape`: every shape but the long ones (`--long` adds them). `--shape`
 * entries name a shape exactly (long or not), or a prefix of names such as `outage` or `crowd-1x40`
 * (long shapes only with `--long`).
 */
export function selectShapes(wanted: string[] | undefined, long: boolean): Set<string> {
  const eligible = (shape: { long: boolean }): boolean => long || !shape.long;
  if (!wanted) return new Set(ALL_SHAPES.filter(eligible).map((shape) => shape.name));
  const chosen = new Set<string>();
  for (const entry of wanted) {
    const exact = ALL_SHAPES.find((shape) => shape.name === entry);
    const matches = exact ? [exact] : ALL_SHAPES.filter((shape) => shape.name.startsWith(`${entry}-`) && eligible(shape));
    if (matches.length === 0)
      throw new Error(
        `--shape ${entry} matches no shape (long ones need --long); known: ${ALL_SHAPES.map((shape) => shape.name).join(', ')}`,
      );
    for (const shape of matches) chosen.add(shape.name);
  }
  return chosen;
}

const secs = (value: number | undefined, limitMs: number): string =>
  value === undefined ? `> ${limitMs / 1000} (not all)` : fmt(value, 2);

/** The earlier tables: a busy target beside a cold one; hanging beside flaky beside healthy; 2 of 20 hanging. */
async function legacyTables(
  ctx: BenchContext,
  shapes: Set<string>,
): Promise<{ tables: Table[]; data: Record<string, unknown>; charts: ChartPanel[] }> {
  const tables: Table[] = [];
  const data: Record<string, unknown> = {};
  const charts: ChartPanel[] = [];
  if (shapes.has('busy')) {
    const busySizes = ctx.quick ? { busy: 600, cold: 50, limitMs: 60_000 } : { busy: 3_000, cold: 50, limitMs: 240_000 };
    const defaults: Consumer = { kind: 'relay', workers: 1, env: {} };
    const busyRuns = [
      await busyRun(ctx, 'defaults (isolation on, 8 lanes), 1 worker', defaults, false, busySizes),
      await busyRun(ctx, 'defaults, 4 workers', { kind: 'relay', workers: 4, env: {} }, false, busySizes),
      await busyRun(ctx, "defaults, U in T's lane (worst case)", defaults, true, busySizes),
      await busyRun(ctx, 'ISOLATION=off (8 lanes)', { kind: 'relay', workers: 1, env: { ISOLATION: 'off' } }, false, busySizes),
      await busyRun(
        ctx,
        'ISOLATION=off, LANES=1 (one FIFO P.work)',
        { kind: 'relay', workers: 1, env: { ISOLATION: 'off', LANES: '1' } },
        false,
        busySizes,
      ),
      await busyRun(ctx, 'minimal consumer (8 lanes)', { kind: 'minimal' }, false, busySizes),
    ];
    tables.push({
      title: `busy: T answers after 300 ms with ${busySizes.busy} queued; U gets ${busySizes.cold} right after, answered at once (PREFETCH 50)`,
      headers: ['run', 'U delivered after (s)', 'T drained after (s)', 'broker publishes per callback'],
      rows: busyRuns.map((run) => [
        run.name,
        secs(run.coldDone, busySizes.limitMs),
        secs(run.busyDrained, busySizes.limitMs),
        run.publishesPerCallback === undefined ? '—' : fmt(run.publishesPerCallback, 2),
      ]),
    });
    Object.assign(data, { busySizes, busyRuns });
    charts.push({
      title: 'U delivered after (s)',
      unit: 's',
      bars: busyRuns.map((run) => ({ label: run.name, value: run.coldDone ?? busySizes.limitMs / 1000 })),
    });
  }
  if (shapes.has('sick')) {
    const sickSizes = ctx.quick
      ? { hanging: 100, others: 50, limitMs: 90_000, lagMs: 8_000 }
      : { hanging: 400, others: 200, limitMs: 150_000, lagMs: 8_000 };
    const sickRuns = [await sickRun(ctx, 'defaults', {}, sickSizes), await sickRun(ctx, 'ISOLATION=off', { ISOLATION: 'off' }, sickSizes)];
    if (!ctx.quick) sickRuns.push(await sickRun(ctx, 'defaults, A has 4,000', {}, { ...sickSizes, hanging: 4_000 }));
    tables.push({
      title: `sick: A hangs (HTTP_TIMEOUT 5s) with ${sickSizes.hanging} queued; ${sickSizes.lagMs / 1000} s later B (500, then 200) and healthy C get ${sickSizes.others} each; RETRY_SCHEDULE 1s,2s, MAX_ATTEMPTS 3`,
      headers: [
        'run',
        'C done after (s)',
        'B done after (s)',
        'A dead-lettered',
        'A all dead after (s)',
        'bound (s)',
        'requests that reached A',
        'broker publishes per callback',
      ],
      rows: sickRuns.map((run) => [
        run.name,
        secs(run.healthyDone, sickSizes.limitMs),
        run.flakyDone === undefined ? `${run.flakyDelivered} delivered` : fmt(run.flakyDone, 2),
        String(run.hangingDead),
        secs(run.hangingDone, sickSizes.limitMs),
        fmt(run.bound, 1),
        String(run.hangingRequests),
        fmt(run.publishesPerCallback ?? NaN, 2),
      ]),
    });
    Object.assign(data, { sickSizes, sickRuns });
  }
  if (shapes.has('twenty')) {
    const isolationOptions = {
      url: ctx.url,
      callbacks: ctx.quick ? 2_000 : 10_000,
      targets: 20,
      httpTimeout: '5s',
      timeLimitMs: ctx.quick ? 30_000 : 90_000,
    };
    const twentyRuns: IsolationRun[] = [
      await runIsolation('fault-free', { ...isolationOptions, hanging: 0 }, {}),
      await runIsolation('2 hanging, defaults', { ...isolationOptions, hanging: 2 }, {}),
      await runIsolation('2 hanging, ISOLATION=off', { ...isolationOptions, hanging: 2 }, { ISOLATION: 'off' }),
    ];
    const base = twentyRuns[0]!;
    tables.push({
      title: `twenty: 2 of 20 targets hanging, ${isolationOptions.callbacks} callbacks, HTTP_TIMEOUT 5s`,
      headers: ['run', 'healthy delivered', 'healthy throughput /s', '×fault-free', 'p99 ms'],
      rows: twentyRuns.map((run) => [
        run.name,
        `${run.delivered}/${run.expected}${run.cutOff ? ' (cut off)' : ''}`,
        fmt(run.throughput),
        fmt(run.throughput / base.throughput, 2),
        fmt(run.p99),
      ]),
    });
    Object.assign(data, { twentyRuns });
  }
  return { tables, data, charts };
}

/**
 * Fair scheduling and isolation, each shape side by side with `ISOLATION=off`: the earlier tables
 * (`busy`, `sick`, `twenty`), the outage shapes (outage.ts) and the crowd shapes (crowd.ts).
 * `--shape` picks some (see selectShapes).
 */
export const fairness: Scenario = {
  name: 'fairness',
  async run(ctx: BenchContext) {
    const shapes = selectShapes(ctx.options.shapes, ctx.options.long);
    ctx.log(`fairness shapes: ${[...shapes].join(', ')}`);
    const legacy = await legacyTables(ctx, shapes);
    const tables = [...legacy.tables];
    const outageRuns: OutageRun[] = [];
    // A shape that fails (a broker too loaded to confirm, say) is reported in its table; the others still run.
    const failedTable = (name: string, error: unknown): Table => ({
      title: `${name}: failed`,
      headers: ['error'],
      rows: [[(error as Error).message]],
    });
    for (const shape of OUTAGE_SHAPES.filter((s) => shapes.has(s.name))) {
      try {
        const runs = [await outageRun(ctx, shape, 'on'), await outageRun(ctx, shape, 'off')];
        outageRuns.push(...runs);
        tables.push(outageTable(shape, runs));
      } catch (error) {
        ctx.log(`fairness ${shape.name} failed: ${(error as Error).stack ?? error}`);
        tables.push(failedTable(shape.name, error));
      }
    }
    const crowdRuns: CrowdRun[] = [];
    const crowdShapes = CROWD_SHAPES.filter((s) => shapes.has(s.name));
    const rounds = Math.max(1, ctx.options.repeat ?? 1);
    const firehose = crowdShapes.length ? await PublishTap.start(ctx.url, ctx.broker.ctl) : undefined;
    try {
      for (const shape of crowdShapes) {
        try {
          // --repeat N: N pairs, off first in every other one, so that a drift of this shared machine
          // falls on both sides; each on run is read against the off run of its own pair.
          const runs: CrowdRun[] = [];
          for (let round = 1; round <= rounds; round += 1) {
            const order: Array<'on' | 'off'> = round % 2 === 1 ? ['on', 'off'] : ['off', 'on'];
            const pair: CrowdRun[] = [];
            for (const isolation of order) pair.push({ ...(await crowdRun(ctx, shape, isolation, firehose)), round });
            runs.push(...pair.sort((a, b) => (a.isolation === 'on' ? -1 : 0) - (b.isolation === 'on' ? -1 : 0)));
          }
          if (runsAlone(shape)) runs.push(await crowdRun(ctx, shape, 'on', firehose, true));
          crowdRuns.push(...runs);
          tables.push(crowdTable(shape, runs));
        } catch (error) {
          ctx.log(`fairness ${shape.name} failed: ${(error as Error).stack ?? error}`);
          tables.push(failedTable(shape.name, error));
        }
      }
    } finally {
      await firehose?.stop();
    }
    const notes = ['LANES 8. Relay workers in the bench process, but in crowd-* shapes, where each is its own compiled process.'];
    if (legacy.tables.length) {
      notes.push(
        'The minimal consumer is amqplib consume → undici POST → ack on every lane, with no retries (so it has no row in the sick-target table: it acks a 500).',
        "busy: U delivered after: from the publish of U's first callback to its last delivery. sick: B and C from their publish; A from its first publish to its last dead-lettering. Broker publishes per callback: the producer's publishes plus every retry and dead-letter copy the workers published, over the callbacks of the run.",
      );
    }
    if (outageRuns.length) {
      notes.push(
        'outage-*: one worker, the library publisher, DELAY_MODE auto (queues mode without the plugin); times in seconds from the first publish. Dead-lettered: messages in P.dead. Requests to X: requests that reached its server (a refused connection is none); attempts made: the worker\'s callback_relay_attempts_total (every attempt is a request or a connection tried); deferred (circuit open): its callback_relay_moves_total{kind="deferred"}, the times a due attempt was moved through the delay path, attempt kept, while X\'s circuit was open. Half and 95 % delivered: when that share of all the callbacks had been delivered (the last delivery alone is often a callback whose request hung in the outage, and its retry).',
      );
    }
    if (crowdRuns.length) {
      notes.push(
        `crowd-*: backlogs queued before the workers start, quiet callbacks published 0.5 s after; quiet done: per quiet target, its first publish → its last delivery (goal ≤ ${QUIET_GOAL_S} s). Busy drained: workers' start → last busy delivery; × off: over the ISOLATION=off run of the same shape; from ready: both counted from the time every worker consumed. With --repeat N, N pairs (off first in every other one), each on run over the off run of its pair, and a last row with the medians of the N pairs: quiet p50 and max (and the worst max), runs with a quiet target over the goal, the drain ratios' median (and range). "on, quiet alone" (shapes with 400 quiet targets): the same quiet callbacks with no busy backlog at all, the time this machine takes for them at best. The results file holds each run's deliveries per 250 ms (timeline).`,
        ctx.broker.ctl
          ? "Publishes / delivered for quiet and busy targets: every client publish carrying that target's callback (producer, retry, dead-letter and any other copy a worker makes), counted through the firehose tracer (rabbitmqctl trace_on), over the callbacks delivered to it. All (metrics): producer publishes plus the retry and dead copies and the moves (to P.slow, and deferrals) the workers report, over every delivered callback."
          : "Publishes per target need rabbitmqctl on the broker (a local throwaway node: TEST_BROKER=local); this broker gives only the all-targets figure from the workers' metrics (producer publishes, retry and dead copies, moves to P.slow and deferrals, over every delivered callback).",
      );
    }
    return {
      tables,
      data: { shapes: [...shapes], ...legacy.data, outageRuns, crowdRuns },
      notes,
      charts: legacy.charts,
    };
  },
};
