import type { BenchContext, Scenario } from '../context.js';
import { cpuSeconds, scrapeDelivered, spawnRelayWorker, type BenchChild } from '../processes.js';
import { benchPublisher, publishAll } from '../publish.js';
import { benchBody, startReceiver, type BenchReceiver } from '../receiver.js';
import { freePort, withScope } from '../scope.js';
import { fmt } from '../stats.js';

interface Step {
  workers: number;
  delivered: number;
  seconds: number;
  rate: number;
  publishRate: number;
  perWorker: number[];
  /** Busiest worker's count / least busy worker's count. */
  imbalance: number;
  cpuUsPerCallback: number;
}

/**
 * `workers` relay processes (defaults, each its own METRICS_PORT) compete on one P.work. They all start
 * consuming first; then `count` callbacks are published as fast as the library publisher goes (500
 * unconfirmed at a time). Rate: first → last delivery; shares: each worker's delivered counter.
 */
export async function scaleOutStep(ctx: BenchContext, receiver: BenchReceiver, workers: number, count: number): Promise<Step> {
  return withScope(ctx.url, async (scope) => {
    const prefix = scope.prefix('scale');
    const { publisher } = benchPublisher(ctx.url, prefix);
    scope.add(publisher);
    const ports: number[] = [];
    const children: BenchChild[] = [];
    for (let i = 0; i < workers; i += 1) {
      ports.push(await freePort());
      children.push(scope.add(spawnRelayWorker({ AMQP_URL: ctx.url, TOPOLOGY_PREFIX: prefix, METRICS_PORT: String(ports[i]) })));
    }
    await Promise.all(children.map((child) => child.ready));
    const cpuBefore = children.map((child) => cpuSeconds(child.pid) ?? 0);
    receiver.reset('ok');
    const published = await publishAll(publisher, count, (i) => ({ callback: { url: receiver.urlFor(i), body: benchBody(i) } }), 500);
    await receiver.waitForDelivered(count, 60_000 + count * 10);
    const cpu = children.reduce((sum, child, i) => sum + ((cpuSeconds(child.pid) ?? 0) - (cpuBefore[i] ?? 0)), 0);
    const perWorker = await Promise.all(ports.map((port) => scrapeDelivered(port)));
    const seconds = (receiver.lastAt - receiver.firstAt) / 1000;
    return {
      workers,
      delivered: receiver.delivered,
      seconds,
      rate: receiver.delivered / seconds,
      publishRate: published.rate,
      perWorker,
      imbalance: Math.max(...perWorker) / Math.max(1, Math.min(...perWorker)),
      cpuUsPerCallback: (cpu * 1e6) / Math.max(1, receiver.delivered),
    };
  });
}

export const scaleOut: Scenario = {
  name: 'scale-out',
  async run(ctx) {
    const count = ctx.quick ? 6_000 : 30_000;
    return withScope(ctx.url, async (scope) => {
      const receiver = scope.add(await startReceiver(10));
      const steps: Step[] = [];
      for (const workers of [1, 2, 4]) {
        const done = await scaleOutStep(ctx, receiver, workers, count);
        ctx.log(`scale-out: ${workers} worker(s): ${fmt(done.rate)}/s, max/min share ${fmt(done.imbalance, 2)}`);
        steps.push(done);
      }
      const base = steps[0] as Step;
      return {
        tables: [
          {
            title: `Scale-out: ${count} callbacks per step, 10 targets, workers as separate processes on one broker (2 cores in all)`,
            headers: [
              'workers',
              'delivered',
              's',
              'deliveries/s',
              '× 1 worker',
              'per worker',
              'max/min share',
              'worker CPU µs/callback',
              'publish /s',
            ],
            rows: steps.map((s) => [
              String(s.workers),
              `${s.delivered}/${count}`,
              fmt(s.seconds, 1),
              fmt(s.rate),
              fmt(s.rate / base.rate, 2),
              s.perWorker.join(' / '),
              fmt(s.imbalance, 2),
              fmt(s.cpuUsPerCallback),
              fmt(s.publishRate),
            ]),
          },
        ],
        data: { count, steps },
        notes: [
          'Workers are started and consuming before the burst is published, so none gets a head start; the publisher runs concurrently with the workers (its rate is shown: when it is close to the delivery rate, the step was publisher-bound).',
          'All processes (broker, workers, publisher and receiver) share the same 2 cores, so more workers mostly add contention here; per-worker shares come from callback_relay_callbacks_total{outcome="delivered"} on each worker\'s METRICS_PORT.',
        ],
        charts: [
          {
            title: 'total deliveries per second by worker count',
            unit: '/s',
            bars: steps.map((s) => ({ label: `${s.workers} worker(s)`, value: s.rate })),
          },
          {
            title: 'busiest / least busy worker',
            unit: '×',
            bars: steps.map((s) => ({ label: `${s.workers} worker(s)`, value: s.imbalance })),
          },
        ],
      };
    });
  },
};
