import type { BenchContext, Scenario } from '../context.js';
import { cpuSeconds, movedCounts } from '../processes.js';
import { publishPaced } from '../publish.js';
import { benchBody, startReceiver } from '../receiver.js';
import { relayMaxRate, startRelay } from '../relay-process.js';
import { withScope } from '../scope.js';
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

/** One worker (defaults plus `env`) fed by a paced publisher at `rate`/s for `seconds`. */
async function runAt(ctx: BenchContext, name: string, rate: number, seconds: number, env: Record<string, string>): Promise<HalfLoadRun> {
  const count = rate * seconds;
  return withScope(ctx.url, async (scope) => {
    const receiver = scope.add(await startReceiver(10));
    const relay = await startRelay(ctx, scope, 'half', env);
    const cpuBefore = cpuSeconds(relay.worker.pid);
    const started = Date.now();
    const published = await publishPaced(relay.publisher, count, rate, (i) => ({ callback: { url: receiver.urlFor(i), body: benchBody(i) } }));
    await receiver.waitForDelivered(count, 60_000);
    const cpu = cpuSeconds(relay.worker.pid);
    // The first second (new connections, the bulkhead's slow start) is reported apart.
    const steady = summarize(receiver.latencies.filter((_, k) => (receiver.sentAts[k] ?? 0) >= started + WARM_UP_S * 1000));
    const run = {
      name,
      steady,
      all: summarize(receiver.latencies),
      behindMs: published.behindMs,
      deferred: (await movedCounts(relay.metricsPort)).deferred,
      workerCpuUsPerCallback: cpu !== undefined && cpuBefore !== undefined ? ((cpu - cpuBefore) * 1e6) / count : undefined,
    };
    ctx.log(`half-load: ${name}: ${rate}/s, p99 ${fmt(steady.p99)} ms`);
    return run;
  });
}

/**
 * Latency when the relay is not saturated: a paced publisher at 50% of the relay's max rate (from the
 * throughput scenario), one worker with every feature on (and, for comparison, ISOLATION=off),
 * publish → delivered at the receiver.
 */
export const halfLoad: Scenario = {
  name: 'half-load',
  async run(ctx) {
    const max = await relayMaxRate(ctx);
    const rate = Math.max(10, Math.round(max.rate / 2));
    const seconds = ctx.quick ? 10 : 60;
    const runs = [await runAt(ctx, 'every feature on', rate, seconds, {}), await runAt(ctx, 'ISOLATION=off', rate, seconds, { ISOLATION: 'off' })];
    const row = (run: HalfLoadRun): string[] => {
      const s = run.steady;
      return [run.name, String(s.count), fmt(s.p50, 1), fmt(s.p99, 1), fmt(s.p999, 1), fmt(s.max), s.p99 <= TARGET_P99_MS ? 'yes' : 'no', String(run.deferred), fmt(run.all.p99, 1)];
    };
    return {
      tables: [
        {
          title: `Half load: ${rate}/s for ${seconds} s (50% of ${fmt(max.rate)}/s, from ${max.source}), 10 targets; latencies after a ${WARM_UP_S} s warm-up`,
          headers: ['worker', 'delivered', 'p50 ms', 'p99 ms', 'p99.9 ms', 'max ms', `p99 ≤ ${TARGET_P99_MS} ms`, 'deferred by the bulkhead', 'p99 incl. warm-up'],
          rows: runs.map(row),
        },
      ],
      data: { rate, seconds, maxRate: max, warmUpSeconds: WARM_UP_S, runs },
      notes: [
        `Paced publisher (library publisher, publish i at i / rate s, up to 2000 unconfirmed); it fell behind schedule by at most ${fmt(Math.max(...runs.map((r) => r.behindMs)))} ms. Latency = receiver arrival − the sentAt stamped just before publish().`,
        `Issue target: p99 ≤ ${TARGET_P99_MS} ms. A deferred callback arrives ≥ OVERFLOW_DELAY (1 s) late, so deferring more than 1% of callbacks puts p99 above a second.`,
      ],
      charts: runs.map((run) => ({
        title: `publish → delivered at ${rate}/s (${run.name})`,
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
