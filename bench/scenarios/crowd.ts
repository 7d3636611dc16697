import { topologyNames } from '../../src/topology/topology-names.js';
import { BrokerTap, type PublishTap } from '../broker-tap.js';
import { benchBuild } from '../bench-build.js';
import type { BenchContext, Table } from '../context.js';
import { benchPublisher } from '../publish.js';
import { withScope } from '../scope.js';
import { fmt, percentile, summarize, type Summary } from '../stats.js';
import { beamCpu } from '../consumer-runs.js';
import { cpuSeconds, type BenchChild } from '../processes.js';
import { LANES, sleep, startConsumers, startTarget, waitUntil, workerMetric, workerPublishes, type Target } from './fair-targets.js';

/**
 * Crowd shapes of issue 21: busy healthy targets (300 ms answers, a deep backlog) and many quiet
 * ones (5 instant callbacks each, each its own origin) published right after the backlog, routed
 * with `deliver.<bucket>` (the library's publisher) or plain `deliver` (a producer that computes
 * nothing, raw AMQP as docs/wire-contract.md describes). Every quiet target should be done within
 * 2 s of its publish, and the busy ones drain about as fast as with ISOLATION=off.
 */
export interface CrowdShape {
  name: string;
  long: boolean;
  busy: number;
  quiet: number;
  routing: 'bucket' | 'plain';
  workers: number;
}

const BUSY_CALLBACKS = 3_000;
const QUICK_BUSY_CALLBACKS = 1_000;
const QUIET_CALLBACKS = 5;
const BUSY_ANSWER_MS = 300;
const PREFETCH = 50;
export const QUIET_GOAL_S = 2;
/** The timeline's resolution: who got the worker's time, and when. */
const TIMELINE_BIN_MS = 250;

export const CROWD_SHAPES: CrowdShape[] = [1, 3].flatMap((busy) =>
  [40, 400].flatMap((quiet) =>
    (['bucket', 'plain'] as const).flatMap((routing) =>
      [1, 4].map((workers) => ({
        name: `crowd-${busy}x${quiet}-${routing}${workers > 1 ? `-${workers}w` : ''}`,
        // Three backlogs of 3,000 at 300 ms through one worker's 50 slots take about a minute per run.
        long: busy > 1 && workers === 1,
        busy,
        quiet,
        routing,
        workers,
      })),
    ),
  ),
);

export interface CrowdRun {
  shape: string;
  isolation: 'on' | 'off';
  /** The quiet targets alone, no busy backlog: how long this machine takes for them at best. */
  alone?: boolean;
  /** Which on/off pair of the shape this run belongs to (`--repeat`; undefined: alone). */
  round?: number;
  busyCallbacks: number;
  /** Per quiet target: seconds from its publish to its last delivery (targets not done are left out). */
  quietDone: Summary;
  quietNotDone: number;
  quietOverGoal: number;
  /** Seconds from the consumers' start to the last busy delivery; undefined: cut off. */
  busyDrained: number | undefined;
  /**
   * Seconds from the consumers' start to the last delivery of any callback, busy or quiet; undefined:
   * cut off. Where the machine, not the receivers, sets the pace, isolation reorders this work (the
   * quiet callbacks first) and cannot end it sooner: this shows what the reordering cost in all.
   */
  allDone: number | undefined;
  /** Seconds from the consumers' start until every worker consumed (process start, topology, presence). */
  workersReady: number;
  /**
   * … until the first one did (each worker its own process). The spread shows what a worker that
   * starts work at once costs its siblings still starting on the same cores.
   */
  firstReady: number | undefined;
  /** Per worker: when it consumed (s from the consumers' start) and its own start steps (ms, its "consuming" log line). */
  workerStarts?: Array<{ readyS?: number; steps?: Record<string, number> }>;
  /** Broker publishes per delivered callback, from the firehose (undefined without rabbitmqctl). */
  quietPublishes: number | undefined;
  busyPublishes: number | undefined;
  /** Without the firehose: producer publishes plus the workers' retry and dead copies, over every delivered callback. */
  allPublishes: number;
  /** The workers' moves: to P.slow (a busy target's excess), and deferrals of an open circuit. */
  overflowMoves: number;
  deferrals: number;
  /**
   * CPU seconds until the last delivery (or the cut-off): the workers' whole processes, and the
   * broker's VM from the workers' start (undefined where its process cannot be read). What isolation
   * adds to the work.
   */
  cpuS?: { workers: number | undefined; broker: number | undefined };
  /** Deliveries per TIMELINE_BIN_MS from the consumers' start, busy and quiet targets apart; and when the quiet ones were published (s). */
  timeline: { binMs: number; busy: number[]; quiet: number[]; quietPublishedAt: number; moved: number[] };
}

/**
 * Whether a shape also runs its quiet targets alone: with 400 of them, 2,000 deliveries to new
 * receivers take a loaded 2-core machine seconds on their own, which the 2 s goal does not allow for.
 */
export function runsAlone(shape: CrowdShape): boolean {
  return shape.quiet >= 400;
}

/**
 * One run: backlogs queued first, then the workers, then 0.5 s later the quiet targets' callbacks.
 * `alone`: no backlog, the quiet targets only (the floor a busy target's presence is measured from).
 * `firehose`: the tracer, on for every crowd run (a rabbitmqctl call can take half a minute on a
 * loaded machine), reset here.
 */
export async function crowdRun(
  ctx: BenchContext,
  shape: CrowdShape,
  isolation: 'on' | 'off',
  firehose: PublishTap | undefined,
  alone = false,
): Promise<CrowdRun> {
  const perBusy = ctx.quick ? QUICK_BUSY_CALLBACKS : BUSY_CALLBACKS;
  return withScope(ctx.url, async (scope) => {
    const busy: Target[] = [];
    for (let i = 0; i < (alone ? 0 : shape.busy); i += 1)
      busy.push(await startTarget(scope, () => ({ status: 200, delayMs: BUSY_ANSWER_MS })));
    const quiet: Target[] = [];
    for (let i = 0; i < shape.quiet; i += 1) quiet.push(await startTarget(scope, () => ({ status: 200, delayMs: 0 })));
    const prefix = scope.prefix('crowd');
    const names = topologyNames(prefix, LANES);
    const tap = await BrokerTap.open(ctx.url);
    scope.defer(() => tap.close());
    const { publisher } = benchPublisher(ctx.url, prefix, { LANES: String(LANES) });
    scope.add(publisher);
    firehose?.reset();
    const send = async (jobs: Array<{ target: Target; path: string; i: number }>): Promise<void> => {
      if (shape.routing === 'plain') {
        await tap.publishRaw(
          names.exchange,
          names.routingKey,
          jobs.map(({ target, path, i }) => ({ id: `${prefix}${path}`, url: `${target.origin}${path}`, body: i })),
        );
        return;
      }
      for (let start = 0; start < jobs.length; start += 500) {
        await Promise.all(
          jobs.slice(start, start + 500).map(({ target, path, i }) => publisher.publish({ url: `${target.origin}${path}`, body: i })),
        );
      }
    };
    // benchPublisher declares the topology first; a raw producer relies on it existing, bindings
    // included (the exchange alone is not enough: a message it cannot route yet is dropped).
    if (!(await waitUntil(() => publisher.connected(), 60_000, Date.now()))) throw new Error('the topology was not declared within 60 s');
    // Busy backlogs interleaved, so every busy target has work from the start.
    await send(
      Array.from({ length: perBusy * busy.length }, (_, n) => ({
        target: busy[n % busy.length]!,
        path: `/t/${Math.floor(n / busy.length)}`,
        i: n,
      })),
    );
    // The workers are compiled once per bench run: not on the clock of the first run.
    benchBuild();
    const brokerBefore = beamCpu(ctx);
    const started = Date.now();
    const workers: BenchChild[] = [];
    const workerStart = (worker: BenchChild): { readyS?: number; steps?: Record<string, number> } => {
      const at = worker.readyAt();
      const steps = startOf(worker.readyLine());
      return { ...(at !== undefined && { readyS: (at - started) / 1000 }), ...(steps && { steps }) };
    };
    const ports = await startConsumers(
      ctx,
      scope,
      prefix,
      { kind: 'relay', workers: shape.workers, env: { ISOLATION: isolation }, processes: true },
      { PREFETCH: String(PREFETCH) },
      workers,
    );
    const workersReady = (Date.now() - started) / 1000;
    const readyTimes = workers.map((worker) => worker.readyAt()).filter((at) => at !== undefined);
    const firstReady = readyTimes.length ? (Math.min(...readyTimes) - started) / 1000 : undefined;
    // The workers' moves to P.slow, scraped per bin from their start: how fast a busy backlog leaves the lanes.
    const movedSoFar: number[] = [];
    const sampler = setInterval(() => {
      const bin = Math.floor((Date.now() - started) / TIMELINE_BIN_MS);
      void workerMetric(ports, 'callback_relay_moves_total', { kind: 'overflow' }).then(
        (count) => (movedSoFar[bin] = Math.max(movedSoFar[bin] ?? 0, count)),
        () => {},
      );
    }, TIMELINE_BIN_MS);
    scope.defer(async () => clearInterval(sampler));
    await sleep(500);
    const publishedAt = new Map<Target, number>();
    const quietJobs = quiet.flatMap((target) => Array.from({ length: QUIET_CALLBACKS }, (_, i) => ({ target, path: `/q/${i}`, i })));
    for (let start = 0; start < quietJobs.length; start += 500) {
      const now = Date.now();
      for (const { target } of quietJobs.slice(start, start + 500)) if (!publishedAt.has(target)) publishedAt.set(target, now);
      await send(quietJobs.slice(start, start + 500));
    }
    // Three times the drain of the backlogs at full speed, and at least two minutes (a loaded machine).
    const limitMs = Math.max(120_000, (3 * perBusy * shape.busy * BUSY_ANSWER_MS) / (PREFETCH * shape.workers));
    const done = (targets: Target[], each: number): boolean => targets.every((target) => target.delivered.size >= each);
    await waitUntil(() => done(quiet, QUIET_CALLBACKS) && done(busy, perBusy), limitMs, started);
    // Read before a cut-off's report, whose rabbitmqctl calls cost the broker too.
    const brokerAfter = beamCpu(ctx);
    const workersCpu = workers.map((worker) => cpuSeconds(worker.pid));
    const cpuS = {
      workers: workersCpu.every((seconds) => seconds !== undefined)
        ? workersCpu.reduce<number>((sum, seconds) => sum + (seconds ?? 0), 0)
        : undefined,
      broker: brokerBefore !== undefined && brokerAfter !== undefined ? brokerAfter - brokerBefore : undefined,
    };
    if (!(done(quiet, QUIET_CALLBACKS) && done(busy, perBusy))) await logCutOff(ctx, tap, names, busy, perBusy, ports, workers);
    const last = (target: Target): number => Math.max(...target.delivered.values());
    const quietDone = quiet
      .filter((target) => target.delivered.size >= QUIET_CALLBACKS)
      .map((target) => (last(target) - publishedAt.get(target)!) / 1000);
    const delivered = (targets: Target[]): number => targets.reduce((sum, target) => sum + target.delivered.size, 0);
    const origins = (targets: Target[]): string[] => targets.map((target) => target.origin);
    const allPublished = perBusy * busy.length + QUIET_CALLBACKS * shape.quiet;
    clearInterval(sampler);
    const overflowMoves = await workerMetric(ports, 'callback_relay_moves_total', { kind: 'overflow' });
    const deferrals = await workerMetric(ports, 'callback_relay_moves_total', { kind: 'deferred' });
    await sleep(firehose ? 300 : 0);
    const run: CrowdRun = {
      shape: shape.name,
      isolation,
      ...(alone && { alone }),
      busyCallbacks: perBusy,
      quietDone: summarize(quietDone),
      quietNotDone: shape.quiet - quietDone.length,
      quietOverGoal: quietDone.filter((seconds) => seconds > QUIET_GOAL_S).length,
      busyDrained: busy.length && done(busy, perBusy) ? (Math.max(...busy.map(last)) - started) / 1000 : undefined,
      allDone:
        quietDone.length === shape.quiet && (busy.length === 0 || done(busy, perBusy))
          ? (Math.max(...busy.map(last), ...quiet.map(last)) - started) / 1000
          : undefined,
      workersReady,
      firstReady,
      workerStarts: workers.map(workerStart),
      quietPublishes: firehose ? firehose.count(origins(quiet)) / delivered(quiet) : undefined,
      busyPublishes: firehose && busy.length ? firehose.count(origins(busy)) / delivered(busy) : undefined,
      // Every broker publish: the producers', the workers' retry and dead-letter copies, and their moves.
      allPublishes: (allPublished + (await workerPublishes(ports)) + overflowMoves + deferrals) / (delivered(quiet) + delivered(busy)),
      overflowMoves,
      deferrals,
      cpuS,
      timeline: {
        binMs: TIMELINE_BIN_MS,
        busy: perBin(busy, started),
        quiet: perBin(quiet, started),
        quietPublishedAt: (Math.min(...publishedAt.values()) - started) / 1000,
        moved: movesPerBin(movedSoFar),
      },
    };
    ctx.log(
      `fairness ${shape.name}, ISOLATION=${isolation}${alone ? ', quiet targets alone' : ''}: quiet p50 ${fmt(run.quietDone.p50, 2)} s, max ${fmt(run.quietDone.max, 2)} s, ` +
        `${run.quietOverGoal} over ${QUIET_GOAL_S} s, ${run.quietNotDone} not done; busy drained ${fmt(run.busyDrained ?? NaN, 1)} s; ` +
        `CPU ${fmt(cpuS.workers ?? NaN, 1)} s workers, ${fmt(cpuS.broker ?? NaN, 1)} s broker; workers ready in ${fmt(workersReady, 2)} s ` +
        `(${run.workerStarts?.map(describeStart).join('; ')})`,
    );
    return run;
  });
}

/**
 * A run cut off with callbacks not delivered: where they are. Ready messages per queue (a callback a
 * worker holds unacked counts in none), and, where rabbitmqctl can be run, every queue of the prefix
 * with its ready and unacknowledged messages and its consumers; the busy targets' missing paths, so a
 * stuck callback can be told from a late one; each worker's counters (attempts by result, moves,
 * consumers the broker cancelled, in flight) and its warnings and errors.
 */
async function logCutOff(
  ctx: BenchContext,
  tap: BrokerTap,
  names: ReturnType<typeof topologyNames>,
  busy: Target[],
  perBusy: number,
  ports: number[],
  workers: BenchChild[],
): Promise<void> {
  const queues = [...names.workQueues, names.slowQueue, names.deadQueue];
  const counts: string[] = [];
  for (const queue of queues) counts.push(`${queue.slice(queue.lastIndexOf('.') + 1)} ${await tap.messageCount(queue)}`);
  const missing = busy.map((target) => {
    const paths = Array.from({ length: perBusy }, (_, i) => `/t/${i}`).filter((path) => !target.delivered.has(path));
    return `${target.origin}: ${paths.length} missing${paths.length ? ` (${paths.slice(0, 5).join(', ')})` : ''}`;
  });
  const retryable = await workerMetric(ports, 'callback_relay_attempts_total', { result: 'retryable' });
  const inFlight = await workerMetric(ports, 'callback_relay_in_flight');
  ctx.log(
    `cut off: ready messages ${counts.join(', ')}; the workers' failed attempts (retryable) ${retryable}, in flight ${inFlight}; ${missing.join('; ')}`,
  );
  if (ctx.broker.inspect) {
    const listed = await ctx.broker
      .inspect(['list_queues', '-q', 'name', 'messages_ready', 'messages_unacknowledged', 'consumers'])
      .catch((error: Error) => error.message);
    const ours = listed.split('\n').filter((line) => line.startsWith(names.exchange) && !/\s0\s+0\s+\d+\s*$/.test(line));
    ctx.log(
      `cut off, the broker's queues of the prefix with messages (name, ready, unacked, consumers):\n  ${ours.join('\n  ') || '(none)'}`,
    );
    const channels = await ctx.broker
      .inspect(['list_channels', '-q', 'pid', 'consumer_count', 'messages_unacknowledged', 'prefetch_count'])
      .catch((error: Error) => error.message);
    ctx.log(
      `cut off, channels holding unacked messages (pid, consumers, unacked, prefetch):\n  ${
        channels
          .split('\n')
          .filter((line) => /\s[1-9]\d*\s+\d+\s*$/.test(line))
          .join('\n  ') || '(none)'
      }`,
    );
  }
  for (const [index, port] of ports.entries()) {
    const text = await fetch(`http://127.0.0.1:${port}/metrics`).then(
      (res) => res.text(),
      (error: Error) => `unreachable: ${error.message}`,
    );
    const counters = text
      .split('\n')
      .filter((line) =>
        /^callback_relay_(attempts_total|moves_total|consumer_cancelled_total|in_flight|callbacks_total|settle_fallbacks_total)/.test(line),
      );
    const noisy = (workers[index]?.output() ?? '')
      .split('\n')
      .filter((line) => /"level":(40|50|60)/.test(line))
      .slice(-20);
    ctx.log(
      `cut off, worker ${index + 1} (exited: ${await Promise.race([workers[index]?.exited.then((code) => String(code)), sleep(0).then(() => 'no')])}):\n  ${counters.join('\n  ')}\n  warnings and errors, the last 20:\n  ${noisy.join('\n  ') || '(none)'}`,
    );
  }
}

/** Moves per bin from the cumulative counts sampled (a bin without a sample moved nothing new). */
function movesPerBin(cumulative: number[]): number[] {
  let before = 0;
  return Array.from(cumulative, (count) => {
    if (count === undefined) return 0;
    const moved = count - before;
    before = count;
    return moved;
  });
}

/** Deliveries to `targets` per TIMELINE_BIN_MS since `startMs`. */
function perBin(targets: Target[], startMs: number): number[] {
  const counts: number[] = [];
  for (const target of targets) {
    for (const at of target.delivered.values()) {
      const bin = Math.max(0, Math.floor((at - startMs) / TIMELINE_BIN_MS));
      counts[bin] = (counts[bin] ?? 0) + 1;
    }
  }
  return Array.from(counts, (count) => count ?? 0);
}

const CROWD_HEADERS = [
  'ISOLATION',
  'quiet done p50 (s)',
  'p99 (s)',
  'max (s)',
  `quiet over ${QUIET_GOAL_S} s`,
  'busy drained (s)',
  '× off',
  'first worker ready (s)',
  'all ready (s)',
  '× off, from first ready',
  'from all ready',
  'everything delivered (s)',
  '× off',
  'CPU s: workers',
  'broker',
  'publishes / delivered: quiet',
  'busy',
  'all (metrics)',
  'moved to P.slow',
  'deferred (circuit open)',
];

/** A table of one shape: isolation on (the defaults) beside off, with the drain ratio on / off. */
export function crowdTable(shape: CrowdShape, runs: CrowdRun[]): Table {
  const pairs = new Set(runs.filter((run) => !run.alone).map((run) => run.round)).size;
  const perBusy = runs[0]?.busyCallbacks ?? BUSY_CALLBACKS;
  const rows = runs.map((run) => {
    const off = offOf(runs, run);
    const label = run.alone ? `${run.isolation}, quiet alone` : pairs > 1 ? `${run.isolation}, pair ${run.round}` : run.isolation;
    return crowdRow(label, run, off, shape);
  });
  if (pairs > 1) rows.push(medianRow(runs));
  return {
    title:
      `${shape.name}: ${shape.busy} busy target${shape.busy > 1 ? 's' : ''} (${perBusy} callbacks each, ${BUSY_ANSWER_MS} ms), ${shape.quiet} quiet ones (${QUIET_CALLBACKS} instant callbacks each), ` +
      `${shape.routing === 'bucket' ? 'deliver.<bucket> (library publisher)' : 'plain `deliver` (raw AMQP)'}, ${shape.workers} worker${shape.workers > 1 ? 's' : ''}, PREFETCH ${PREFETCH}`,
    headers: CROWD_HEADERS,
    rows,
  };
}

/** The off run a run is read against: its own pair's; for the alone run, the first pair's. */
function offOf(runs: CrowdRun[], run: CrowdRun): CrowdRun | undefined {
  return runs.find((other) => other.isolation === 'off' && !other.alone && (run.alone || other.round === run.round));
}

function crowdRow(label: string, run: CrowdRun, off: CrowdRun | undefined, shape: CrowdShape): string[] {
  return [
    label,
    fmt(run.quietDone.p50, 2),
    fmt(run.quietDone.p99, 2),
    fmt(run.quietDone.max, 2),
    `${run.quietOverGoal}/${shape.quiet}${run.quietNotDone ? ` (${run.quietNotDone} not done)` : ''}`,
    run.busyDrained === undefined ? (run.alone ? '—' : 'cut off') : fmt(run.busyDrained, 1),
    run.busyDrained !== undefined && off?.busyDrained !== undefined ? fmt(run.busyDrained / off.busyDrained, 2) : '—',
    run.firstReady === undefined ? '—' : fmt(run.firstReady, 2),
    run.workersReady === undefined ? '—' : fmt(run.workersReady, 2),
    run.busyDrained !== undefined && off?.busyDrained !== undefined && run.firstReady !== undefined && off.firstReady !== undefined
      ? fmt((run.busyDrained - run.firstReady) / (off.busyDrained - off.firstReady), 2)
      : '—',
    run.busyDrained !== undefined && off?.busyDrained !== undefined
      ? fmt((run.busyDrained - run.workersReady) / (off.busyDrained - off.workersReady), 2)
      : '—',
    run.allDone === undefined ? '—' : fmt(run.allDone, 1),
    !run.alone && run.allDone !== undefined && off?.allDone !== undefined ? fmt(run.allDone / off.allDone, 2) : '—',
    fmt(run.cpuS?.workers, 1),
    fmt(run.cpuS?.broker, 1),
    fmt(run.quietPublishes, 3),
    fmt(run.busyPublishes, 3),
    fmt(run.allPublishes, 3),
    String(run.overflowMoves),
    String(run.deferrals),
  ];
}

/** The on runs of every pair: the median of their quiet p50s and maxes, the worst max, and the median (range) of their drains over their pair's off. */
function medianRow(runs: CrowdRun[]): string[] {
  const on = runs.filter((run) => run.isolation === 'on' && !run.alone);
  const ratios = on.flatMap((run) => {
    const off = offOf(runs, run);
    return run.busyDrained !== undefined && off?.busyDrained !== undefined ? [run.busyDrained / off.busyDrained] : [];
  });
  const row = new Array<string>(CROWD_HEADERS.length).fill('—');
  row[0] = `on, median of ${on.length} pairs`;
  row[1] = fmt(
    percentile(
      on.map((run) => run.quietDone.p50),
      50,
    ),
    2,
  );
  row[3] = `${fmt(
    percentile(
      on.map((run) => run.quietDone.max),
      50,
    ),
    2,
  )} (worst ${fmt(Math.max(...on.map((run) => run.quietDone.max)), 2)})`;
  row[4] = `${on.filter((run) => run.quietOverGoal > 0).length} of ${on.length} runs with a target over`;
  if (ratios.length) row[6] = `${fmt(percentile(ratios, 50), 2)} (${fmt(Math.min(...ratios), 2)}–${fmt(Math.max(...ratios), 2)})`;
  return row;
}

/** One worker's start for the log: "3.41 s: topology 2156, control 171, presence 1, consume 222". */
function describeStart({ readyS, steps }: { readyS?: number; steps?: Record<string, number> }): string {
  return `${fmt(readyS ?? NaN, 2)} s: ${Object.entries(steps ?? {})
    .map(([step, ms]) => `${step.replace(/Ms$/, '')} ${ms}`)
    .join(', ')}`;
}

/** The start steps a worker's "consuming" line reports (src/consumer/worker.ts), if it parses. */
function startOf(line: string | undefined): Record<string, number> | undefined {
  try {
    return line ? (JSON.parse(line) as { start?: Record<string, number> }).start : undefined;
  } catch {
    return undefined;
  }
}
