import { topologyNames } from '../../src/topology/topology-names.js';
import { BrokerTap } from '../broker-tap.js';
import type { BenchContext, Table } from '../context.js';
import { benchPublisher } from '../publish.js';
import { withScope } from '../scope.js';
import { fmt } from '../stats.js';
import { LANES, publishTo, sleep, startConsumers, startTarget, workerMetric, type Reply } from './fair-targets.js';

/**
 * Outage shapes of issue 21: one target X that is down for a while (or slow) and then fine, with
 * isolation on and off side by side. The circuit may change who waits, never whether a callback is
 * delivered: on must deliver at least what off delivers, about as soon, and dead-letter none earlier.
 */
export interface OutageShape {
  name: string;
  /** Left out unless `--long` (or named exactly). */
  long: boolean;
  title: string;
  fault: 'hang' | 'refuse' | '503' | 'stall' | 'slow';
  callbacks: number;
  /** How long X is down, from the first publish (stall: how long it holds its answers). */
  outageMs: number;
  env: Record<string, string>;
  limitMs: number;
}

const SHORT = { RETRY_SCHEDULE: '2s,4s,8s,16s', MAX_ATTEMPTS: '5', HTTP_TIMEOUT: '5s' };
const SHORT_SPAN_MS = 30_000 + 5 * 5_000;
const FAULT_TEXT = { hang: 'hangs (no answer)', refuse: 'refuses connections', '503': 'answers 503 at once' } as const;
// The stall starts 2 s in, while most of the 300 callbacks wait in the lane or in flight.
const STALL_FROM_MS = 2_000;

const down = (fault: 'hang' | 'refuse' | '503', outageMs: number, schedule: 'short' | 'default'): OutageShape => {
  const label = outageMs >= 60_000 ? `${outageMs / 60_000}m` : `${outageMs / 1000}s`;
  return {
    name: `outage-${fault}-${label}${schedule === 'default' ? '-default' : ''}`,
    long: outageMs > 10_000,
    title: `X ${FAULT_TEXT[fault]} for ${label}, then answers 200 at once; ${schedule === 'short' ? 'RETRY_SCHEDULE 2s,4s,8s,16s, MAX_ATTEMPTS 5, HTTP_TIMEOUT 5s' : 'the default schedule (15s,15s,30s,3m,…), HTTP_TIMEOUT 10s'}`,
    fault,
    callbacks: 200,
    outageMs,
    env: schedule === 'short' ? SHORT : {},
    // The default schedule's fifth attempt comes 4 min in; beyond that the run is cut off.
    limitMs: schedule === 'short' ? outageMs + SHORT_SPAN_MS + 60_000 : outageMs + 300_000,
  };
};

export const OUTAGE_SHAPES: OutageShape[] = [
  ...(['hang', 'refuse', '503'] as const).flatMap((fault) => [
    down(fault, 10_000, 'short'),
    down(fault, 120_000, 'short'),
    down(fault, 120_000, 'default'),
  ]),
  {
    name: 'outage-stall',
    long: false,
    title: 'X answers 200 after 1 s, but holds every answer from 2 s to 12 s in (300 callbacks); RETRY_SCHEDULE 1s, MAX_ATTEMPTS 5',
    fault: 'stall',
    callbacks: 300,
    outageMs: 10_000,
    env: { RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '5' },
    limitMs: 120_000,
  },
  {
    name: 'outage-slow',
    long: false,
    title: 'X is slow but works: 200 after 3.5 s, always (100 callbacks); HTTP_TIMEOUT 10s, RETRY_SCHEDULE 1s, MAX_ATTEMPTS 5',
    fault: 'slow',
    callbacks: 100,
    outageMs: 0,
    env: { RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '5', HTTP_TIMEOUT: '10s' },
    limitMs: 120_000,
  },
];

export interface OutageRun {
  shape: string;
  isolation: 'on' | 'off';
  callbacks: number;
  delivered: number;
  dead: number;
  /** Requests that reached X (a refused connection is none). */
  requests: number;
  /** Attempts the workers made (each a request sent, or a connection tried). */
  attempts: number;
  /** Deferrals while X's circuit was open: moves through the delay path that kept the attempt. */
  deferred: number;
  /** Seconds from the first publish. */
  lastDelivery: number | undefined;
  /** Seconds from the first publish by which half, and 95 %, of all the callbacks were delivered (undefined: never). */
  halfDelivered: number | undefined;
  mostDelivered: number | undefined;
  /** Seconds from the first publish by which half, and 95 %, of all the callbacks were in P.dead (undefined: never; polled every 250 ms). */
  halfDead: number | undefined;
  mostDead: number | undefined;
  lastDead: number | undefined;
  /** Every callback delivered or in P.dead; undefined: cut off at the shape's limit. */
  allEnded: number | undefined;
}

/** How X answers a request that arrives `at` ms after the first publish. */
function answerOf(shape: OutageShape, at: number): Reply {
  switch (shape.fault) {
    case 'hang':
      return at < shape.outageMs ? null : { status: 200, delayMs: 0 };
    case '503':
      return { status: at < shape.outageMs ? 503 : 200, delayMs: 0 };
    case 'refuse':
      return { status: 200, delayMs: 0 };
    case 'stall': {
      const held = at >= STALL_FROM_MS && at < STALL_FROM_MS + shape.outageMs;
      return { status: 200, delayMs: held ? STALL_FROM_MS + shape.outageMs - at + 1_000 : 1_000 };
    }
    case 'slow':
      return { status: 200, delayMs: 3_500 };
  }
}

/** One run of a shape: one in-process worker, queues mode unless DELAY_MODE says otherwise, the library's publisher. */
export async function outageRun(ctx: BenchContext, shape: OutageShape, isolation: 'on' | 'off'): Promise<OutageRun> {
  return withScope(ctx.url, async (scope) => {
    let t0 = Date.now();
    const target = await startTarget(scope, () => answerOf(shape, Date.now() - t0));
    const prefix = scope.prefix('outage');
    const ports = await startConsumers(ctx, scope, prefix, { kind: 'relay', workers: 1, env: { ...shape.env, ISOLATION: isolation } }, {});
    const publisher = scope.add(benchPublisher(ctx.url, prefix, { LANES: String(LANES) }).publisher);
    const tap = await BrokerTap.open(ctx.url);
    scope.defer(() => tap.close());
    const deadQueue = topologyNames(prefix, LANES).deadQueue;
    t0 = Date.now();
    if (shape.fault === 'refuse') {
      await target.refuse();
      const back = setTimeout(() => void target.listen(), shape.outageMs);
      scope.defer(async () => clearTimeout(back));
    }
    await publishTo(publisher, target, 'x', shape.callbacks);
    let dead = 0;
    let lastDeadAt: number | undefined;
    // When the dead-lettered count first reached a share of the callbacks: a tail of a few late ones shows apart from the bulk.
    const deadShareAt = new Map<number, number>();
    while (Date.now() - t0 < shape.limitMs) {
      const now = await tap.messageCount(deadQueue);
      if (now > dead) lastDeadAt = Date.now();
      dead = now;
      for (const share of [0.5, 0.95])
        if (!deadShareAt.has(share) && dead >= Math.ceil(shape.callbacks * share)) deadShareAt.set(share, Date.now());
      if (target.delivered.size + dead >= shape.callbacks) break;
      await sleep(250);
    }
    const seconds = (at: number | undefined): number | undefined => (at === undefined ? undefined : (at - t0) / 1000);
    const lastDelivery = target.delivered.size ? Math.max(...target.delivered.values()) : undefined;
    const ended = target.delivered.size + dead >= shape.callbacks;
    const run: OutageRun = {
      shape: shape.name,
      isolation,
      callbacks: shape.callbacks,
      delivered: target.delivered.size,
      dead,
      requests: target.requests,
      attempts: await workerMetric(ports, 'callback_relay_attempts_total'),
      deferred: await workerMetric(ports, 'callback_relay_moves_total', { kind: 'deferred' }),
      lastDelivery: seconds(lastDelivery),
      halfDelivered: seconds(deliveredShare(target.delivered, shape.callbacks, 0.5)),
      mostDelivered: seconds(deliveredShare(target.delivered, shape.callbacks, 0.95)),
      halfDead: seconds(deadShareAt.get(0.5)),
      mostDead: seconds(deadShareAt.get(0.95)),
      lastDead: seconds(lastDeadAt),
      allEnded: ended ? seconds(Math.max(lastDelivery ?? 0, lastDeadAt ?? 0)) : undefined,
    };
    ctx.log(
      `fairness ${shape.name}, ISOLATION=${isolation}: ${run.delivered} delivered, ${run.dead} dead, ${run.requests} requests, ended ${fmt(run.allEnded ?? NaN, 1)} s`,
    );
    return run;
  });
}

const secs = (value: number | undefined): string => (value === undefined ? '—' : fmt(value, 1));

/** When `share` of `callbacks` had been delivered (the delivery times by callback); undefined if they never were. */
function deliveredShare(delivered: Map<string, number>, callbacks: number, share: number): number | undefined {
  const needed = Math.ceil(callbacks * share);
  if (delivered.size < needed) return undefined;
  return [...delivered.values()].sort((a, b) => a - b)[needed - 1];
}

/** A table of one shape: isolation on (the defaults) beside off. */
export function outageTable(shape: OutageShape, runs: OutageRun[]): Table {
  return {
    title: `${shape.name}: ${shape.title}`,
    headers: [
      'ISOLATION',
      'delivered',
      'dead-lettered (P.dead)',
      'requests to X',
      'attempts made',
      'deferred (circuit open)',
      'half delivered (s)',
      '95 % delivered (s)',
      'last delivery (s)',
      'half dead-lettered (s)',
      '95 % dead-lettered (s)',
      'last dead-letter (s)',
      'all ended (s)',
    ],
    rows: runs.map((run) => [
      run.isolation,
      `${run.delivered}/${run.callbacks}`,
      String(run.dead),
      String(run.requests),
      String(run.attempts),
      String(run.deferred),
      secs(run.halfDelivered),
      secs(run.mostDelivered),
      secs(run.lastDelivery),
      secs(run.halfDead),
      secs(run.mostDead),
      secs(run.lastDead),
      run.allEnded === undefined ? `cut off at ${fmt(shape.limitMs / 1000)}` : fmt(run.allEnded, 1),
    ]),
  };
}
