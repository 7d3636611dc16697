import { brokerMemoryBytes } from '../broker-memory.js';
import { SKIP_PLUGIN, type BenchContext, type Scenario } from '../context.js';
import { cpuSeconds, deferredCount, overflowCount, sleep, spawnRelayWorker } from '../processes.js';
import { benchPublisher, publishAll } from '../publish.js';
import { startReceiver, type BenchReceiver } from '../receiver.js';
import { freePort, withScope } from '../scope.js';
import { fmt, summarize, type Summary } from '../stats.js';
import { DEFAULT_LANES, laneBucket, laneOf } from '../../src/topology/topology-names.js';

/** Receiver origins, as in the other scenarios: ten targets over the worker's lanes. */
const TARGETS = 10;

type Mode = 'queues' | 'plugin';

interface PendingRun {
  mode: Mode;
  skipped?: string;
  count?: number;
  windowS?: number;
  /** Fresh callbacks: pre-filled, then drained by the worker (first → last delivery). */
  fresh?: { count: number; publishRate: number; seconds: number; rate: number; workerCpuUs?: number; overflowed?: number };
  /** Callbacks moved to P.slow over the whole run (callback_relay_moves_total{kind="overflow"}): two broker operations more each. */
  overflowed?: number;
  /** The worker's CPU per delivered callback (µs), from the publishing of the delayed ones to the last delivery (fresh: over its drain). */
  workerCpuUs?: number;
  /** Delayed callbacks: confirmed publishes per second, all of them before the first fell due. */
  publishRate?: number;
  /** Delivered before the publishing ended (the lead was too short when > 0). */
  deliveredWhilePublishing?: number;
  /** Due before the publishing ended, so never pending: their lateness counts the publishing (0 with a long enough lead). */
  publishedAfterDue?: number;
  /** From the start of the delayed publishing to the first due time (s). */
  leadS?: number;
  /** Broker memory with every callback pending, less before, per callback (bytes): the background's when there is one. */
  memoryPerPending?: number;
  /** Callbacks kept pending beside the measured ones, due hours after the run (--background). */
  background?: number;
  memoryBefore?: number;
  memoryPending?: number;
  /** Arrival at the receiver − the callback's deliverAt (ms). */
  lateness?: Summary;
  delivered?: number;
  /** First due → last delivered (s), and the delivered rate over it. */
  drainSeconds?: number;
  delayedRate?: number;
  brokerCores?: number;
  /** Callbacks deferred over the whole run (a target's circuit opened: slow attempts on a busy machine). */
  deferred?: number;
  /**
   * How many of the targets hash to each lane (the receivers' ports are new each run): a lane's
   * callbacks come out of one quorum queue, so a run whose targets crowd into few lanes differs from
   * one where they spread.
   */
  targetsPerLane?: number[];
  /** Lateness by the second of the window each callback was due in: where the tail comes from. */
  bySecond?: Array<{ second: number; count: number; p50: number; p99: number; max: number }>;
}

/** The body carries the callback's due time as `sentAt`: the receiver's latency is then its lateness. */
const body = (i: number, dueAt: number): { sentAt: number; i: number; event: string; pad: string } => ({
  sentAt: dueAt,
  i,
  event: 'order.paid',
  pad: 'x'.repeat(200),
});

/**
 * Scheduled callbacks at scale, in one worker process with default settings:
 * 1. fresh: `count` callbacks without a delay pre-fill the lanes, then the worker starts and drains
 *    them (its fresh-callback rate);
 * 2. with `background`: that many callbacks due 3 to 4 hours later, published and left pending (the
 *    topology's teardown deletes them), so that the rest runs with the broker holding them all;
 *    broker memory per pending callback is read from them;
 * 3. pending: the same worker; `count` callbacks published with `deliverAt` spread evenly over
 *    `window` seconds, the first due `lead` seconds after the publishing starts (by default long enough
 *    for it to be done, so that every callback is pending when the first falls due); broker memory is
 *    read with all of them pending, and each one's lateness at the receiver.
 */
async function runMode(
  ctx: BenchContext,
  mode: Mode,
  count: number,
  windowS: number,
  background: number,
  leadS: number,
): Promise<PendingRun> {
  if (mode === 'plugin' && !ctx.broker.hasPlugin) return { mode, skipped: SKIP_PLUGIN };
  return withScope(ctx.url, async (scope) => {
    const receiver: BenchReceiver = scope.add(await startReceiver(TARGETS));
    const prefix = scope.prefix(`pending-${mode}`);
    const targetsPerLane = Array.from(
      { length: DEFAULT_LANES },
      (_, lane) => receiver.origins.filter((origin) => laneOf(laneBucket(origin), DEFAULT_LANES) === lane).length,
    );
    ctx.log(`pending ${mode}: targets per lane ${targetsPerLane.join(' ')}`);
    // BENCH_ISOLATION=off measures the delay path alone: on a busy machine slow attempts can open a
    // target's circuit, and its retries (15 s and more later) then count as lateness.
    const env: Record<string, string> = {
      DELAY_MODE: mode,
      ...(process.env.BENCH_ISOLATION ? { ISOLATION: process.env.BENCH_ISOLATION } : {}),
    };
    const { publisher } = benchPublisher(ctx.url, prefix, env);
    scope.add(publisher);

    // 1. Fresh callbacks, pre-filled: the rate this worker delivers at.
    const freshPublished = await publishAll(publisher, count, (i) => ({
      callback: { url: receiver.urlFor(i), body: body(i, Date.now()) },
    }));
    ctx.log(`pending ${mode}: ${count} fresh published at ${fmt(freshPublished.rate)}/s`);
    const metricsPort = await freePort();
    const worker = scope.add(spawnRelayWorker({ AMQP_URL: ctx.url, TOPOLOGY_PREFIX: prefix, METRICS_PORT: String(metricsPort), ...env }));
    await worker.ready;
    const workerCpuAtStart = cpuSeconds(worker.pid);
    await receiver.waitForDelivered(count, 120_000 + count * 5);
    const freshSeconds = (receiver.lastAt - receiver.firstAt) / 1000;
    const workerCpuFresh = perCallbackUs(workerCpuAtStart, cpuSeconds(worker.pid), receiver.delivered);
    const freshOverflowed = await overflowCount(metricsPort).catch(() => undefined);
    const fresh = {
      count,
      publishRate: freshPublished.rate,
      seconds: freshSeconds,
      rate: receiver.delivered / freshSeconds,
      workerCpuUs: workerCpuFresh,
      overflowed: freshOverflowed,
    };
    ctx.log(`pending ${mode}: fresh ${receiver.delivered}/${count} at ${fmt(fresh.rate)}/s`);
    await sleep(2_000);

    // 2. The background: pending all through the measured part, spread over an hour of due times
    // (every delay level in queues mode; one table in plugin mode), never due within the run.
    receiver.reset('ok');
    const memoryBefore = await brokerMemoryBytes(ctx);
    let memoryPerBackground: number | undefined;
    if (background > 0) {
      const later = Date.now() + 3 * 3_600_000;
      const sent = await publishAll(publisher, background, (i) => ({
        callback: { url: receiver.urlFor(i), body: body(i, later) },
        options: { deliverAt: new Date(later + (i * 3_600_000) / background) },
      }));
      const memoryWith = await brokerMemoryBytes(ctx);
      memoryPerBackground = memoryBefore === undefined || memoryWith === undefined ? undefined : (memoryWith - memoryBefore) / background;
      ctx.log(`pending ${mode}: ${background} background callbacks published at ${fmt(sent.rate)}/s; ${fmt(memoryPerBackground)} B each`);
    }

    // 3. Delayed callbacks, spread over the window, the first due after the publishing (with room).
    const memoryMeasured = await brokerMemoryBytes(ctx);
    const leadMs = leadS * 1_000;
    const base = Date.now() + leadMs;
    const dueOf = (i: number): number => base + (i * windowS * 1_000) / count;
    const beam = ctx.broker.beamPid;
    const cpuBefore = beam === undefined ? undefined : cpuSeconds(beam);
    const workerCpuBefore = cpuSeconds(worker.pid);
    const published = await publishAll(publisher, count, (i) => ({
      callback: { url: receiver.urlFor(i), body: body(i, dueOf(i)) },
      options: { deliverAt: new Date(dueOf(i)) },
    }));
    const deliveredWhilePublishing = receiver.delivered;
    // Published evenly in due order: those due before the last confirm were (about) published late.
    const publishedAfterDue = Math.min(count, Math.max(0, Math.ceil(((Date.now() - base) / (windowS * 1_000)) * count)));
    const memoryPending = await brokerMemoryBytes(ctx);
    ctx.log(
      `pending ${mode}: ${count} delayed published at ${fmt(published.rate)}/s; first due in ${fmt((base - Date.now()) / 1000, 1)} s${publishedAfterDue > 0 ? `; ${publishedAfterDue} were due before their publishing ended (a longer --lead keeps them pending)` : ''}`,
    );
    const done = await receiver.waitForDelivered(count, leadMs + windowS * 1_000 + 300_000 + count * 2);
    const cpuAfter = beam === undefined ? undefined : cpuSeconds(beam);
    const workerCpuUs = perCallbackUs(workerCpuBefore, cpuSeconds(worker.pid), receiver.delivered);
    const drainSeconds = (receiver.lastAt - base) / 1000;
    const lateness = summarize(receiver.latencies);
    ctx.log(
      `pending ${mode}: ${receiver.delivered}/${count} delivered${done ? '' : ' (timed out)'}; lateness p50 ${fmt(lateness.p50)} p99 ${fmt(lateness.p99)} max ${fmt(lateness.max)} ms`,
    );
    return {
      mode,
      count,
      windowS,
      fresh,
      publishRate: published.rate,
      deliveredWhilePublishing,
      publishedAfterDue,
      leadS,
      memoryBefore,
      memoryPending,
      background,
      memoryPerPending:
        memoryPerBackground ??
        (memoryMeasured === undefined || memoryPending === undefined ? undefined : (memoryPending - memoryMeasured) / count),
      lateness,
      delivered: receiver.delivered,
      drainSeconds,
      delayedRate: receiver.delivered / Math.max(drainSeconds, 1e-3),
      workerCpuUs,
      deferred: await deferredCount(metricsPort).catch(() => undefined),
      overflowed: await overflowCount(metricsPort).catch(() => undefined),
      targetsPerLane,
      bySecond: latenessBySecond(receiver.sentAts, receiver.latencies, base),
      brokerCores:
        cpuBefore === undefined || cpuAfter === undefined ? undefined : (cpuAfter - cpuBefore) / ((Date.now() - base + leadMs) / 1000),
    };
  });
}

/** CPU seconds spent between two readings, per callback, in µs. */
const perCallbackUs = (before: number | undefined, after: number | undefined, callbacks: number): number | undefined =>
  before === undefined || after === undefined || callbacks === 0 ? undefined : ((after - before) * 1e6) / callbacks;

/** Lateness summarised per second of due time from `baseMs` (the first due time). */
function latenessBySecond(dueAts: number[], latencies: number[], baseMs: number): PendingRun['bySecond'] {
  const seconds = new Map<number, number[]>();
  dueAts.forEach((dueAt, i) => {
    const second = Math.floor((dueAt - baseMs) / 1_000);
    let list = seconds.get(second);
    if (!list) seconds.set(second, (list = []));
    list.push(latencies[i] as number);
  });
  return [...seconds]
    .sort(([a], [b]) => a - b)
    .map(([second, list]) => {
      const { p50, p99, max } = summarize(list);
      return { second, count: list.length, p50, p99, max };
    });
}

export const pending: Scenario = {
  name: 'pending',
  async run(ctx) {
    const opts = ctx.options.pending;
    const count = opts.count ?? (ctx.quick ? 5_000 : 20_000);
    const windowS = opts.windowS ?? (ctx.quick ? 5 : 20);
    const modes = opts.modes ?? ['queues', 'plugin'];
    const runs: PendingRun[] = [];
    const background = opts.background ?? 0;
    // Long enough that every callback is published before the first falls due (they are pending, as the
    // scenario means), at the slowest delayed-publish rate measured on 2 cores (1,769/s, 3.10, queues mode).
    const leadS = opts.leadS ?? 5 + count / 1_000;
    for (const mode of modes) runs.push(await runMode(ctx, mode, count, windowS, background, leadS));
    const row = (run: PendingRun): string[] =>
      run.skipped
        ? [run.mode, '', run.skipped, '', '', '', '', '', '', '', '', '', '', '', '', '']
        : [
            run.mode,
            fmt(run.background),
            `${run.delivered}/${run.count}`,
            fmt(run.publishRate),
            fmt(run.publishedAfterDue),
            fmt(run.memoryPerPending),
            fmt(run.lateness!.p50),
            fmt(run.lateness!.p99),
            fmt(run.lateness!.max),
            fmt((run.count as number) / (run.windowS as number)),
            `${fmt(run.delayedRate)} (${fmt(run.drainSeconds, 1)} s)`,
            `${fmt(run.fresh!.rate)} (${fmt(run.fresh!.seconds, 1)} s)`,
            fmt((run.drainSeconds as number) / run.fresh!.seconds, 2),
            `${fmt(run.workerCpuUs)} (${fmt(run.fresh!.workerCpuUs)})`,
            run.overflowed === undefined ? '' : `${run.overflowed} (${run.fresh!.overflowed ?? ''})`,
            run.deferred === undefined ? '' : String(run.deferred),
          ];
    return {
      tables: [
        {
          title: `Pending callbacks: ${count} due evenly over ${windowS} s (${fmt(count / windowS)}/s), the first ${fmt(leadS)} s after the publishing starts, one worker, ${process.env.BENCH_ISOLATION ? `ISOLATION=${process.env.BENCH_ISOLATION}` : 'default settings'}, ${TARGETS} instant targets`,
          headers: [
            'delay mode',
            'pending beside (--background)',
            'delivered',
            'publish /s',
            'due before published',
            'broker B/pending',
            'lateness p50 ms',
            'p99 ms',
            'max ms',
            'due /s',
            'delayed /s (first due → last)',
            'fresh /s (same worker)',
            'delayed time ÷ fresh time',
            'worker CPU µs/callback, delayed (fresh)',
            'moved to P.slow, in all (in the fresh part)',
            'deferred (circuit open)',
          ],
          rows: runs.map(row),
        },
      ],
      data: { count, windowS, runs },
      notes: [
        'Lateness: arrival at the receiver − deliverAt. Due before published: callbacks whose due time came before the publishing ended (from the publish order), late by that much at least; 0 when the lead is long enough. Fresh: the same number of callbacks without a delay, pre-filled, then drained by the same worker process before the delayed ones are published.',
        'Broker memory: mem_used (the Erlang VM total, after a garbage collection) with every callback pending, less the same before publishing, per callback; with --background, measured on the background callbacks, which stay pending (due 3 to 4 h later) while the measured ones run.',
        'delayed time ÷ fresh time: first due → last delivered against the fresh drain; at or under 1 the delay path keeps up with the worker (the floor is the window itself when the due rate is below the fresh rate).',
        'Deferred: callbacks moved unattempted while their target\'s circuit was open (callback_relay_moves_total{kind="deferred"}; slow attempts on a busy machine open it); each is attempted once a real attempt would have ended, which shows as lateness. BENCH_ISOLATION=off measures the delay path without it.',
        'Ratios come from one run on a shared 2-core machine: compare the modes within a run, not across runs.',
      ],
      charts: runs
        .filter((run) => run.lateness)
        .map((run) => ({
          title: `lateness, ${run.count} due over ${run.windowS} s (${run.mode} mode)`,
          unit: 'ms',
          bars: [
            { label: 'p50', value: run.lateness!.p50 },
            { label: 'p99', value: run.lateness!.p99 },
            { label: 'max', value: run.lateness!.max },
          ],
        })),
    };
  },
};
