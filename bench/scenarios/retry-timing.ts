import { SKIP_PLUGIN, type BenchContext, type ChartPanel, type Scenario } from '../context.js';
import { cpuSeconds, deferredCount } from '../processes.js';
import { publishPaced } from '../publish.js';
import { benchBody, startReceiver } from '../receiver.js';
import { relayMaxRate, startRelay } from '../relay-process.js';
import { withScope } from '../scope.js';
import { fmt, summarize, type Summary } from '../stats.js';

const DELAY_MS = 2_000;

interface ModeRun {
  mode: 'queues' | 'plugin';
  isolation: 'on' | 'off';
  skipped?: string;
  count?: number;
  retried?: number;
  lateness?: Summary;
  deferred?: number;
  /** Broker CPU per callback over the run (two attempts and one retry publish each), µs. */
  brokerCpuUs?: number;
  /** Broker CPU seconds per wall second over the run (cores busy). */
  brokerCores?: number;
}

/**
 * Accuracy of a retry delay: every callback fails once (500) and succeeds on attempt 2. With
 * RETRY_SCHEDULE=2s and RETRY_JITTER=0, attempt 2 is due 2 s after attempt 1; lateness is the
 * receiver's arrival time of attempt 2 minus (arrival of attempt 1 + 2 s).
 */
async function runMode(
  ctx: BenchContext,
  mode: 'queues' | 'plugin',
  isolation: 'on' | 'off',
  count: number,
  rate: number,
): Promise<ModeRun> {
  if (mode === 'plugin' && !ctx.broker.hasPlugin) return { mode, isolation, skipped: SKIP_PLUGIN };
  return withScope(ctx.url, async (scope) => {
    const receiver = scope.add(await startReceiver(10, 'fail-once'));
    const relay = await startRelay(ctx, scope, `retry-${mode}`, {
      DELAY_MODE: mode,
      RETRY_SCHEDULE: `${DELAY_MS}ms`,
      RETRY_JITTER: '0',
      ISOLATION: isolation,
    });
    const beam = (): number | undefined => (ctx.broker.beamPid === undefined ? undefined : cpuSeconds(ctx.broker.beamPid));
    const brokerBefore = beam();
    const started = Date.now();
    await publishPaced(relay.publisher, count, rate, (i) => ({ callback: { url: receiver.urlFor(i), body: benchBody(i) } }));
    await receiver.waitForDelivered(count, 60_000 + count * 10);
    const lateness: number[] = [];
    for (const times of receiver.attempts.values()) {
      if (times.length >= 2) lateness.push((times[1] as number) - ((times[0] as number) + DELAY_MS));
    }
    const brokerAfter = beam();
    const brokerCpuUs = brokerBefore === undefined || brokerAfter === undefined ? undefined : ((brokerAfter - brokerBefore) * 1e6) / count;
    const brokerCores =
      brokerBefore === undefined || brokerAfter === undefined ? undefined : (brokerAfter - brokerBefore) / ((Date.now() - started) / 1000);
    return {
      mode,
      isolation,
      count,
      retried: lateness.length,
      lateness: summarize(lateness),
      deferred: await deferredCount(relay.metricsPort),
      brokerCpuUs,
      brokerCores,
    };
  });
}

export const retryTiming: Scenario = {
  name: 'retry-timing',
  async run(ctx) {
    const count = ctx.quick ? 1_000 : 10_000;
    // First attempts and retries share the worker: a third of the max rate keeps both below saturation,
    // so lateness measures the delay path, not a backlog in P.work.
    const max = await relayMaxRate(ctx);
    const rate = Math.max(10, Math.round(max.rate / 3));
    const runs: ModeRun[] = [];
    for (const mode of ['queues', 'plugin'] as const) {
      for (const isolation of ['on', 'off'] as const) {
        if (mode === 'plugin' && !ctx.broker.hasPlugin && isolation === 'off') continue;
        const run = await runMode(ctx, mode, isolation, count, rate);
        ctx.log(
          `retry-timing ${mode}${run.skipped ? '' : `, ISOLATION=${isolation}`}: ${run.skipped ?? `p99 lateness ${fmt(run.lateness?.p99)} ms`}`,
        );
        runs.push(run);
      }
    }
    const charts: ChartPanel[] = runs
      .filter((run) => run.lateness)
      .map((run) => ({
        title: `lateness of attempt 2 vs attempt 1 + 2 s (${run.mode} mode, ISOLATION=${run.isolation})`,
        unit: 'ms',
        bars: [
          { label: 'p50', value: run.lateness!.p50 },
          { label: 'p99', value: run.lateness!.p99 },
          { label: 'max', value: run.lateness!.max },
        ],
      }));
    return {
      tables: [
        {
          title: `Retry timing: ${count} callbacks failing once, RETRY_SCHEDULE=2s, RETRY_JITTER=0, published at ${rate}/s (a third of ${fmt(max.rate)}/s)`,
          headers: [
            'delay mode',
            'ISOLATION',
            'retried',
            'lateness p50 ms',
            'p99 ms',
            'p99.9 ms',
            'max ms',
            'min ms',
            'deferred (circuit open)',
            'broker CPU µs/callback (cores busy)',
          ],
          rows: runs.map((run) =>
            run.skipped
              ? [run.mode, '', run.skipped, '', '', '', '', '', '', '']
              : [
                  run.mode,
                  run.isolation,
                  `${run.retried}/${run.count}`,
                  fmt(run.lateness!.p50),
                  fmt(run.lateness!.p99),
                  fmt(run.lateness!.p999),
                  fmt(run.lateness!.max),
                  fmt(run.lateness!.min),
                  String(run.deferred ?? ''),
                  `${fmt(run.brokerCpuUs)} (${fmt(run.brokerCores, 2)})`,
                ],
          ),
        },
      ],
      data: { count, rate, delayMs: DELAY_MS, runs },
      notes: [
        'Lateness includes the 500 answer reaching the worker, the retry copy being published and confirmed, the delay, and the trip back through the work lane to the receiver.',
        'Every first attempt fails with a fast 500. Isolation counts only slow attempts against a target, so no circuit opens (the deferred column stays 0) and every retry is a real attempt on its schedule; ISOLATION=off shows the delay path alone.',
        'Each retry in queues mode is a confirmed publish into a quorum delay level, then an at-least-once dead-letter into the lane, paid in broker CPU; when the broker is busy (cores busy near what the machine can give it) retries and first attempts queue up in the lanes, which shows as lateness.',
        'Queues mode sends a 2 s delay through the delay level queue P.delay.up.1s (the whole seconds less 250 ms), which dead-letters into the lane of the message, where the worker holds it until due (x-callback-due-at).',
      ],
      charts,
    };
  },
};
