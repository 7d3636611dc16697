import { SKIP_PLUGIN, type BenchContext, type Scenario } from '../context.js';
import { cpuSeconds, deferredCount, rssMb, scrapeMetric, sleep } from '../processes.js';
import { publishAll } from '../publish.js';
import { benchBody, startReceiver } from '../receiver.js';
import { startRelay } from '../relay-process.js';
import { withScope } from '../scope.js';
import { fmt } from '../stats.js';

/** Peak RSS (MB) of the worker and the broker per phase, sampled every 250 ms. */
class RssSampler {
  readonly peaks: Record<string, { worker: number; broker: number }> = {};
  private phase = 'idle';
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly workerPid: number,
    private readonly brokerPid: number | undefined,
  ) {
    this.timer = setInterval(() => this.sample(), 250);
    this.sample();
  }

  enter(phase: string): void {
    this.sample();
    this.phase = phase;
    this.sample();
  }

  sample(): void {
    const peak = (this.peaks[this.phase] ??= { worker: 0, broker: 0 });
    peak.worker = Math.max(peak.worker, rssMb(this.workerPid) ?? 0);
    peak.broker = Math.max(peak.broker, rssMb(this.brokerPid) ?? Number.NaN);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/**
 * A backlog of pending delayed callbacks: N callbacks published with the same `deliverAt` (a time far
 * enough ahead for the publishing to finish), so they sit together in the delay queues (queues mode)
 * or in the plugin's table (plugin mode) and all fall due at once. Measures the delayed-publish rate, worker and broker RSS while they sit, and the drain.
 */
async function runBacklog(ctx: BenchContext, count: number, mode: 'queues' | 'plugin') {
  return withScope(ctx.url, async (scope) => {
    const receiver = scope.add(await startReceiver(10));
    const relay = await startRelay(ctx, scope, `backlog-${mode}`, { DELAY_MODE: mode });
    const sampler = new RssSampler(relay.worker.pid, ctx.broker.beamPid);
    scope.defer(async () => sampler.stop());
    await sleep(1_000);
    sampler.enter('publishing');
    // One shared due time, far enough ahead for the publishing to finish; re-projected every 1000
    // publishes and pushed back (for the rest) if the publishing would overrun it.
    const started = Date.now();
    // A first guess of 5,000 publishes/s; the projection below pushes it back when publishing is slower.
    let dueAt = started + 8_000 + (count / 5_000) * 1_000;
    const firstDueAt = dueAt;
    const brokerCpuBefore = ctx.broker.beamPid === undefined ? undefined : cpuSeconds(ctx.broker.beamPid);
    const published = await publishAll(relay.publisher, count, (i) => {
      const projectedEnd = i > 0 && i % 1_000 === 0 ? started + ((Date.now() - started) * count) / i : 0;
      if (projectedEnd + 4_000 > dueAt) dueAt = projectedEnd + 8_000;
      return { callback: { url: receiver.urlFor(i), body: benchBody(i) }, options: { deliverAt: new Date(dueAt) } };
    });
    const brokerCpuAfter = ctx.broker.beamPid === undefined ? undefined : cpuSeconds(ctx.broker.beamPid);
    const publishedLate = Math.max(0, Date.now() - dueAt);
    sampler.enter('sitting');
    const satFor = Math.max(0, dueAt - Date.now());
    while (Date.now() < dueAt && receiver.delivered === 0) await sleep(100);
    sampler.enter('draining');
    const complete = await receiver.waitForDelivered(count, 120_000 + count * 5);
    sampler.stop();
    // What the worker's RSS is made of, right after the drain (prom-client's default process metrics).
    const mb = async (name: string): Promise<number> => (await scrapeMetric(relay.metricsPort, name)) / 2 ** 20;
    const memory = {
      heapUsedMb: await mb('nodejs_heap_size_used_bytes'),
      heapTotalMb: await mb('nodejs_heap_size_total_bytes'),
      externalMb: await mb('nodejs_external_memory_bytes'),
    };
    // The drain counts the callbacks due at the final due time (whole seconds, so from 1 s before it).
    const arrivals = receiver.latencies.map((latency, k) => latency + (receiver.sentAts[k] ?? 0)).filter((at) => at >= dueAt - 1_000);
    const drainStart = arrivals.reduce((a, b) => Math.min(a, b), Infinity);
    const drainSeconds = (arrivals.reduce((a, b) => Math.max(a, b), 0) - drainStart) / 1000;
    return {
      mode,
      count,
      published,
      publishedLate,
      dueSpreadMs: dueAt - firstDueAt,
      brokerCpuUsPerPublish:
        brokerCpuBefore === undefined || brokerCpuAfter === undefined ? undefined : ((brokerCpuAfter - brokerCpuBefore) * 1e6) / count,
      satForSeconds: satFor / 1000,
      delivered: receiver.delivered,
      complete,
      firstDeliveryAfterDueMs: drainStart - dueAt,
      drainSeconds,
      drained: arrivals.length,
      drainRate: arrivals.length / drainSeconds,
      rss: sampler.peaks,
      workerMemoryAfterDrain: memory,
      deferred: await deferredCount(relay.metricsPort),
    };
  });
}

type BacklogRun = Awaited<ReturnType<typeof runBacklog>>;

function row(run: BacklogRun): string[] {
  const mb = (phase: string, who: 'worker' | 'broker'): string => fmt(run.rss[phase]?.[who]);
  return [
    run.mode,
    fmt(run.published.rate),
    fmt(run.brokerCpuUsPerPublish),
    fmt(run.satForSeconds, 1),
    `${mb('idle', 'worker')} / ${mb('sitting', 'worker')} / ${mb('draining', 'worker')}`,
    `${mb('idle', 'broker')} / ${mb('sitting', 'broker')} / ${mb('draining', 'broker')}`,
    fmt(run.drainSeconds, 1),
    fmt(run.drainRate),
    String(run.deferred),
  ];
}

const drainNote = (run: BacklogRun): string =>
  `Drain (${run.mode} mode): the ${run.drained} callbacks due at the final due time, first → last delivery (the first ${Math.round(Math.abs(run.firstDeliveryAfterDueMs))} ms ${run.firstDeliveryAfterDueMs < 0 ? 'before' : 'after'} the due time; delays are whole seconds in queues mode). ${run.publishedLate > 0 ? `Publishing overran the due time by ${run.publishedLate} ms.` : 'Publishing finished before the due time.'} The due time was pushed back by ${fmt(run.dueSpreadMs / 1000, 1)} s while publishing; ${run.count - run.drained} callbacks published before that fell due earlier and are not in the drain. Worker memory right after the drain: V8 heap ${fmt(run.workerMemoryAfterDrain.heapUsedMb)} MB used of ${fmt(run.workerMemoryAfterDrain.heapTotalMb)} MB, external ${fmt(run.workerMemoryAfterDrain.externalMb)} MB.`;

export const backlog: Scenario = {
  name: 'backlog',
  async run(ctx) {
    const count = ctx.quick ? 20_000 : 200_000;
    const run = await runBacklog(ctx, count, 'queues');
    ctx.log(`backlog queues: published ${fmt(run.published.rate)}/s, drained ${fmt(run.drainRate)}/s`);
    const plugin = ctx.broker.hasPlugin ? await runBacklog(ctx, count, 'plugin') : undefined;
    if (plugin) ctx.log(`backlog plugin: published ${fmt(plugin.published.rate)}/s, drained ${fmt(plugin.drainRate)}/s`);
    const runs = plugin ? [run, plugin] : [run];
    return {
      tables: [
        {
          title: `Backlog: ${count} delayed callbacks due at the same moment`,
          headers: [
            'delay mode',
            'publish /s',
            'broker CPU µs/publish',
            'sat for s',
            'worker RSS MB idle / sitting / draining',
            'broker RSS MB idle / sitting / draining',
            'drain s',
            'drain /s',
            'deferred (circuit open)',
          ],
          rows: [...runs.map(row), ...(plugin ? [] : [['plugin', SKIP_PLUGIN, '', '', '', '', '', '', '']])],
        },
      ],
      // The queues run stays at the top level, where earlier results keep it; the plugin run beside it.
      data: { ...run, ...(plugin ? { plugin } : {}), workerTargetMb: 150 },
      notes: [
        "Published with the library publisher (200 unconfirmed at a time) and `deliverAt` = one shared due time. In queues mode each callback routes through the delay levels of its own remaining seconds; in plugin mode it waits in the plugin's node-local table with its own `x-delay`. All fall due together.",
        `Worker: one compiled relay worker process (\`node …/consumer/main.js\`, as \`npm start\` runs it) with the defaults; RSS is VmRSS from /proc, peak per phase (target ≤ 150 MB). Broker: RSS of the throwaway node's beam.smp (${ctx.broker.beamPid ? 'local' : 'n/a: not a local broker'}).`,
        ...runs.map(drainNote),
      ],
      charts: runs.flatMap((r) => [
        {
          title: `worker RSS (peak per phase, ${r.mode} mode)`,
          unit: 'MB',
          target: 150,
          bars: ['idle', 'sitting', 'draining'].map((phase) => ({ label: phase, value: r.rss[phase]?.worker ?? Number.NaN })),
        },
        {
          title: `delayed publish and drain rates (${r.mode} mode)`,
          unit: '/s',
          bars: [
            { label: 'publish (delayed)', value: r.published.rate },
            { label: 'drain', value: r.drainRate },
          ],
        },
      ]),
    };
  },
};
