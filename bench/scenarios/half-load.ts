import type { BenchContext, Scenario } from '../context.js';
import { topologyNames } from '../../src/topology/topology-names.js';
import { createLogger } from '../../src/logger.js';
import type { CallbackPublisher } from '../../src/producer/publisher.js';
import { declareOnce } from '../../src/topology/connect-topology.js';
import { cpuSeconds, deferredCount, spawnBenchScript, type BenchChild } from '../processes.js';
import { benchPublisher, publishPaced } from '../publish.js';
import { benchBody, startReceiver } from '../receiver.js';
import { relayMaxRate, startRelay } from '../relay-process.js';
import { withScope, type Scope } from '../scope.js';
import { scaleOutStep } from './scale-out.js';
import { fmt, summarize, type Summary } from '../stats.js';

const TARGET_P99_MS = 25;
const WARM_UP_S = 1;

interface HalfLoadRun {
  name: string;
  /** After the warm-up second. */
  steady: Summary;
  all: Summary;
  behindMs: number;
  deferred: number;
  workerCpuUsPerCallback: number | undefined;
}

/**
 * The minimal consumer (ceiling (b) of throughput) on a relay topology: what the broker, the disk and
 * the machine add to the latency at this rate without the relay.
 */
async function startMinimal(
  ctx: BenchContext,
  scope: Scope,
): Promise<{ publisher: CallbackPublisher; worker: BenchChild; metricsPort: undefined }> {
  const prefix = scope.prefix('half');
  const { config, publisher } = benchPublisher(ctx.url, prefix);
  scope.add(publisher);
  await declareOnce(config, createLogger('silent'));
  const worker = scope.add(
    spawnBenchScript('minimal-consumer', { AMQP_URL: ctx.url, QUEUES: topologyNames(prefix).workQueues.join(','), PREFETCH: '100' }),
  );
  await worker.ready;
  return { publisher, worker, metricsPort: undefined };
}

/** One consumer (a relay worker with the defaults plus `env`, or the minimal one) fed by a paced publisher at `rate`/s for `seconds`. */
async function runAt(
  ctx: BenchContext,
  name: string,
  rate: number,
  seconds: number,
  env: Record<string, string> | 'minimal',
): Promise<HalfLoadRun> {
  const count = rate * seconds;
  return withScope(ctx.url, async (scope) => {
    const receiver = scope.add(await startReceiver(10));
    const relay = env === 'minimal' ? await startMinimal(ctx, scope) : await startRelay(ctx, scope, 'half', env);
    const cpuBefore = cpuSeconds(relay.worker.pid);
    const started = Date.now();
    const published = await publishPaced(relay.publisher, count, rate, (i) => ({
      callback: { url: receiver.urlFor(i), body: benchBody(i) },
    }));
    await receiver.waitForDelivered(count, 60_000);
    const cpu = cpuSeconds(relay.worker.pid);
    // The first second (new connections, the bulkhead's slow start) is reported apart.
    const steady = summarize(receiver.latencies.filter((_, k) => (receiver.sentAts[k] ?? 0) >= started + WARM_UP_S * 1000));
    const run = {
      name,
      steady,
      all: summarize(receiver.latencies),
      behindMs: published.behindMs,
      deferred: relay.metricsPort === undefined ? 0 : await deferredCount(relay.metricsPort),
      workerCpuUsPerCallback: cpu !== undefined && cpuBefore !== undefined ? ((cpu - cpuBefore) * 1e6) / count : undefined,
    };
    ctx.log(`half-load: ${name}: ${rate}/s, p99 ${fmt(steady.p99)} ms`);
    return run;
  });
}

/**
 * Latency when the relay is not saturated: a paced publisher at 50% of the relay's max rate, one
 * worker, publish → delivered at the receiver. Two max rates: the pre-filled one from `throughput`
 * (the consumer alone), and the end-to-end one with the publisher running beside the relay on the
 * same broker and cores (one scale-out step). The minimal consumer runs at each rate as a control.
 */
export const halfLoad: Scenario = {
  name: 'half-load',
  async run(ctx) {
    const prefilled = await relayMaxRate(ctx);
    const endToEnd = await withScope(ctx.url, async (scope) =>
      scaleOutStep(ctx, scope.add(await startReceiver(10)), 1, ctx.quick ? 6_000 : 30_000),
    );
    ctx.log(`half-load: end-to-end max ${fmt(endToEnd.rate)}/s`);
    const rates = [
      {
        rate: Math.max(10, Math.round(prefilled.rate / 2)),
        of: `50% of the pre-filled max ${fmt(prefilled.rate)}/s (${prefilled.source})`,
      },
      {
        rate: Math.max(10, Math.round(endToEnd.rate / 2)),
        of: `50% of the end-to-end max ${fmt(endToEnd.rate)}/s (publisher and relay together, measured now)`,
      },
    ];
    const seconds = ctx.quick ? 10 : 30;
    const runs: Array<HalfLoadRun & { rate: number; of: string }> = [];
    for (const [k, { rate, of }] of rates.entries()) {
      const consumers: Array<[string, Record<string, string> | 'minimal']> = [
        ['relay, every feature on', {}],
        ...(k === 1 ? [['relay, ISOLATION=off', { ISOLATION: 'off' }] as [string, Record<string, string>]] : []),
        ['minimal consumer (ceiling b)', 'minimal'],
      ];
      for (const [name, env] of consumers) runs.push({ ...(await runAt(ctx, name, rate, seconds, env)), rate, of });
    }
    const row = (run: HalfLoadRun & { rate: number; of: string }): string[] => {
      const s = run.steady;
      return [
        run.of,
        run.name,
        String(s.count),
        fmt(s.p50, 1),
        fmt(s.p99, 1),
        fmt(s.p999, 1),
        fmt(s.max),
        s.p99 <= TARGET_P99_MS ? 'yes' : 'no',
        String(run.deferred),
        fmt(run.all.p99, 1),
      ];
    };
    return {
      tables: [
        {
          title: `Half load: ${seconds} s per run, 10 targets; latencies after a ${WARM_UP_S} s warm-up`,
          headers: [
            'rate',
            'consumer',
            'delivered',
            'p50 ms',
            'p99 ms',
            'p99.9 ms',
            'max ms',
            `p99 ≤ ${TARGET_P99_MS} ms`,
            'deferred (circuit open)',
            'p99 incl. warm-up',
          ],
          rows: runs.map(row),
        },
      ],
      data: { rates, seconds, prefilledMax: prefilled, endToEnd, warmUpSeconds: WARM_UP_S, runs },
      notes: [
        `Paced publisher (library publisher, publish i at i / rate s, up to 2000 unconfirmed); it fell behind schedule by at most ${fmt(Math.max(...runs.map((r) => r.behindMs)))} ms. Latency = receiver arrival − the sentAt stamped just before publish().`,
        'The pre-filled max counts the consumer alone; at half of it, publishing (which costs the broker about as much as consuming) comes on top, on the same 2 cores. The end-to-end max is the rate with the publisher running beside the relay.',
        'The minimal consumer runs at the same rate on the same topology: the latency the broker (quorum queue commits), the disk and the shared cores add without the relay.',
        `Issue target: p99 ≤ ${TARGET_P99_MS} ms.`,
      ],
      charts: runs.map((run) => ({
        title: `publish → delivered at ${run.rate}/s (${run.name})`,
        unit: 'ms',
        target: TARGET_P99_MS,
        bars: [
          { label: 'p50', value: run.steady.p50 },
          { label: 'p99', value: run.steady.p99 },
          { label: 'p99.9', value: run.steady.p999 },
        ],
      })),
    };
  },
};
