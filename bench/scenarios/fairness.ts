import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { loadConfig } from '../../src/config/load-config.js';
import { createWorker } from '../../src/consumer/worker.js';
import { createLogger } from '../../src/logger.js';
import { createPublisher } from '../../src/producer/publisher.js';
import { laneBucket, laneOf } from '../../src/topology/lanes.js';
import { topologyNames } from '../../src/topology/topology-names.js';
import type { BenchContext, Scenario } from '../context.js';
import { freePort, Scope, withScope } from '../scope.js';
import { spawnBenchScript } from '../processes.js';
import { fmt } from '../stats.js';
import { runIsolation } from './isolation.js';

/** A local receiver; `answer` decides per request (null = hang until the client gives up). */
interface Target {
  origin: string;
  /** First time each path got a 2xx, ms since the epoch. */
  delivered: Map<string, number>;
  requests: number;
}

async function startTarget(scope: Scope, answer: (path: string, nth: number) => { status: number; delayMs: number } | null): Promise<Target> {
  const seen = new Map<string, number>();
  const target: Target = { origin: '', delivered: new Map(), requests: 0 };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '/';
      const nth = (seen.get(path) ?? 0) + 1;
      seen.set(path, nth);
      target.requests += 1;
      const reply = answer(path, nth);
      if (!reply) return;
      setTimeout(() => {
        res.writeHead(reply.status).end();
        if (reply.status < 300 && !target.delivered.has(path)) target.delivered.set(path, Date.now());
      }, reply.delayMs);
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  target.origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  scope.defer(async () => {
    server.closeAllConnections();
    server.close();
  });
  return target;
}

const LANES = 8;
const laneOfTarget = (target: Target): number => laneOf(laneBucket(target.origin), LANES);

/** A target in the same lane as `other` (or in another one): ports are random, so listen until it fits. */
async function startTargetInLane(scope: Scope, other: Target, same: boolean, answer: Parameters<typeof startTarget>[1]): Promise<Target> {
  for (;;) {
    const trial = new Scope(scope.url);
    const candidate = await startTarget(trial, answer);
    if ((laneOfTarget(candidate) === laneOfTarget(other)) === same) {
      scope.defer(() => trial.close());
      return candidate;
    }
    await trial.close();
  }
}

type Consumer = { kind: 'relay'; workers: number; env: Record<string, string> } | { kind: 'minimal' };

/** Starts the consumers of a run; returns the metrics ports of relay workers (for publish counts). */
async function startConsumers(ctx: BenchContext, scope: Scope, prefix: string, consumer: Consumer, base: Record<string, string>): Promise<number[]> {
  if (consumer.kind === 'minimal') {
    const child = scope.add(spawnBenchScript('minimal-consumer', { AMQP_URL: ctx.url, QUEUES: topologyNames(prefix, LANES).workQueues.join(','), PREFETCH: base.PREFETCH ?? '50' }));
    await child.ready;
    return [];
  }
  const ports: number[] = [];
  for (let i = 0; i < consumer.workers; i += 1) {
    const port = await freePort();
    const config = loadConfig({ AMQP_URL: ctx.url, TOPOLOGY_PREFIX: prefix, LOG_LEVEL: 'silent', METRICS_PORT: String(port), LANES: String(LANES), TARGET_POLICY: 'default', ...base, ...consumer.env });
    const worker = scope.add(createWorker(config, createLogger('silent')));
    await worker.start();
    ports.push(port);
  }
  return ports;
}

/** Broker publishes by the workers so far (retry, dead-letter copies), read off their /metrics. */
async function workerPublishes(ports: number[]): Promise<number> {
  let total = 0;
  for (const port of ports) {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    for (const match of text.matchAll(/^callback_relay_publish_confirm_seconds_count\{[^}]*\} (\d+)/gm)) total += Number(match[1]);
  }
  return total;
}

/** Publishes `count` callbacks to `target`, 500 at a time (the publisher's buffer holds PUBLISH_BUFFER_LIMIT). */
async function publishTo(publisher: ReturnType<typeof createPublisher>, target: Target, tag: string, count: number): Promise<void> {
  for (let start = 0; start < count; start += 500) {
    await Promise.all(Array.from({ length: Math.min(500, count - start) }, (_, i) => publisher.publish({ url: `${target.origin}/${tag}/${start + i}`, body: start + i })));
  }
}

const waitUntil = async (done: () => boolean, limitMs: number, started: number): Promise<boolean> => {
  while (!done() && Date.now() - started < limitMs) await new Promise((resolve) => setTimeout(resolve, 20));
  return done();
};

export interface BusyRun {
  name: string;
  /** Seconds from U's publish to its last delivery (undefined: not all within the limit). */
  coldDone: number | undefined;
  /** Seconds from the first publish to T's last delivery. */
  busyDrained: number | undefined;
  publishesPerCallback: number | undefined;
}

/** Scenario 1: busy healthy T (answers after 300 ms, deep backlog), then cold U with a few callbacks. */
async function busyRun(ctx: BenchContext, name: string, consumer: Consumer, sharedLane: boolean, sizes: { busy: number; cold: number; limitMs: number }): Promise<BusyRun> {
  return withScope(ctx.url, async (scope) => {
    const busy = await startTarget(scope, () => ({ status: 200, delayMs: 300 }));
    const cold = await startTargetInLane(scope, busy, sharedLane, () => ({ status: 200, delayMs: 0 }));
    const prefix = scope.prefix('fair');
    const base = { PREFETCH: '50' };
    // Every process that declares the topology must agree on LANES.
    const lanes = consumer.kind === 'relay' ? (consumer.env.LANES ?? String(LANES)) : String(LANES);
    const publisher = scope.add(createPublisher(loadConfig({ AMQP_URL: ctx.url, TOPOLOGY_PREFIX: prefix, LOG_LEVEL: 'silent', LANES: lanes }), createLogger('silent')));
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
async function sickRun(ctx: BenchContext, name: string, env: Record<string, string>, sizes: { hanging: number; others: number; limitMs: number; lagMs: number }): Promise<SickRun> {
  return withScope(ctx.url, async (scope) => {
    const hanging = await startTarget(scope, () => null);
    const flaky = await startTargetInLane(scope, hanging, false, (_path, nth) => ({ status: nth === 1 ? 500 : 200, delayMs: 0 }));
    let healthy = await startTargetInLane(scope, hanging, false, () => ({ status: 200, delayMs: 0 }));
    while (laneOfTarget(healthy) === laneOfTarget(flaky)) healthy = await startTargetInLane(scope, hanging, false, () => ({ status: 200, delayMs: 0 }));
    const prefix = scope.prefix('sick');
    const settings = { PREFETCH: '50', HTTP_TIMEOUT: '5s', RETRY_SCHEDULE: '1s,2s', MAX_ATTEMPTS: '3', ...env };
    const ports = await startConsumers(ctx, scope, prefix, { kind: 'relay', workers: 1, env: settings }, {});
    const publisher = scope.add(createPublisher(loadConfig({ AMQP_URL: ctx.url, TOPOLOGY_PREFIX: prefix, LOG_LEVEL: 'silent', LANES: String(LANES) }), createLogger('silent')));
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
    while (Date.now() - started < sizes.limitMs && (deadCount < sizes.hanging || flaky.delivered.size < sizes.others || healthy.delivered.size < sizes.others)) {
      await countDead();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await countDead();
    const last = (target: Target, n: number): number | undefined => (target.delivered.size === n ? (Math.max(...target.delivered.values()) - othersPublished) / 1000 : undefined);
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
    ctx.log(`fairness sick: ${name}: C ${fmt(run.healthyDone ?? NaN, 2)} s, B ${fmt(run.flakyDone ?? NaN, 2)} s, A dead ${run.hangingDead} in ${fmt(run.hangingDone ?? NaN, 1)} s`);
    return run;
  });
}

const secs = (value: number | undefined, limitMs: number): string => (value === undefined ? `> ${limitMs / 1000} (not all)` : fmt(value, 2));

/** Fair scheduling (busy target next to a cold one; hanging next to flaky next to healthy; 2 of 20 hanging), side by side. */
export const fairness: Scenario = {
  name: 'fairness',
  async run(ctx: BenchContext) {
    const busySizes = ctx.quick ? { busy: 600, cold: 50, limitMs: 60_000 } : { busy: 3_000, cold: 50, limitMs: 240_000 };
    const defaults: Consumer = { kind: 'relay', workers: 1, env: {} };
    const busyRuns = [
      await busyRun(ctx, 'defaults (isolation on, 8 lanes), 1 worker', defaults, false, busySizes),
      await busyRun(ctx, 'defaults, 4 workers', { kind: 'relay', workers: 4, env: {} }, false, busySizes),
      await busyRun(ctx, 'defaults, U in T\'s lane (worst case)', defaults, true, busySizes),
      await busyRun(ctx, 'ISOLATION=off (8 lanes)', { kind: 'relay', workers: 1, env: { ISOLATION: 'off' } }, false, busySizes),
      await busyRun(ctx, 'ISOLATION=off, LANES=1 (one FIFO P.work)', { kind: 'relay', workers: 1, env: { ISOLATION: 'off', LANES: '1' } }, false, busySizes),
      await busyRun(ctx, 'minimal consumer (8 lanes)', { kind: 'minimal' }, false, busySizes),
    ];
    const sickSizes = ctx.quick ? { hanging: 100, others: 50, limitMs: 90_000, lagMs: 8_000 } : { hanging: 400, others: 200, limitMs: 150_000, lagMs: 8_000 };
    const sickRuns = [await sickRun(ctx, 'defaults', {}, sickSizes), await sickRun(ctx, 'ISOLATION=off', { ISOLATION: 'off' }, sickSizes)];
    if (!ctx.quick) sickRuns.push(await sickRun(ctx, 'defaults, A has 4,000', {}, { ...sickSizes, hanging: 4_000 }));
    const isolationOptions = { url: ctx.url, callbacks: ctx.quick ? 2_000 : 10_000, targets: 20, httpTimeout: '5s', timeLimitMs: ctx.quick ? 30_000 : 90_000 };
    const twentyRuns = [
      await runIsolation('fault-free', { ...isolationOptions, hanging: 0 }, {}),
      await runIsolation('2 hanging, defaults', { ...isolationOptions, hanging: 2 }, {}),
      await runIsolation('2 hanging, ISOLATION=off', { ...isolationOptions, hanging: 2 }, { ISOLATION: 'off' }),
    ];
    const base = twentyRuns[0]!;
    return {
      tables: [
        {
          title: `Busy target: T answers after 300 ms with ${busySizes.busy} queued; U gets ${busySizes.cold} right after, answered at once (PREFETCH 50)`,
          headers: ['run', 'U delivered after (s)', 'T drained after (s)', 'broker publishes per callback'],
          rows: busyRuns.map((run) => [run.name, secs(run.coldDone, busySizes.limitMs), secs(run.busyDrained, busySizes.limitMs), run.publishesPerCallback === undefined ? '—' : fmt(run.publishesPerCallback, 2)]),
        },
        {
          title: `Sick targets: A hangs (HTTP_TIMEOUT 5s) with ${sickSizes.hanging} queued; ${sickSizes.lagMs / 1000} s later B (500, then 200) and healthy C get ${sickSizes.others} each; RETRY_SCHEDULE 1s,2s, MAX_ATTEMPTS 3`,
          headers: ['run', 'C done after (s)', 'B done after (s)', 'A dead-lettered', 'A all dead after (s)', 'bound (s)', 'requests that reached A', 'broker publishes per callback'],
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
        },
        {
          title: `2 of 20 targets hanging, ${isolationOptions.callbacks} callbacks, HTTP_TIMEOUT 5s`,
          headers: ['run', 'healthy delivered', 'healthy throughput /s', '×fault-free', 'p99 ms'],
          rows: twentyRuns.map((run) => [run.name, `${run.delivered}/${run.expected}${run.cutOff ? ' (cut off)' : ''}`, fmt(run.throughput), fmt(run.throughput / base.throughput, 2), fmt(run.p99)]),
        },
      ],
      data: { busySizes, sickSizes, busyRuns, sickRuns, twentyRuns },
      notes: [
        'In-process relay workers; the minimal consumer is amqplib consume → undici POST → ack on every lane, with no retries (so it has no row in the sick-target table: it acks a 500).',
        'U delivered after: from the publish of U\'s first callback to its last delivery. B and C: from their publish. A: from its first publish to its last dead-lettering.',
        'Broker publishes per callback: the producer\'s publishes plus every retry and dead-letter copy the workers published, over the callbacks of the run.',
      ],
      charts: [{ title: 'U delivered after (s)', unit: 's', bars: busyRuns.map((run) => ({ label: run.name, value: run.coldDone ?? busySizes.limitMs / 1000 })) }],
    };
  },
};
