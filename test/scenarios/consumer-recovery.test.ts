import { afterEach, expect, inject, it } from 'vitest';
import { laneBucket, laneOf } from '../../src/topology/topology-names.js';
import { freePort } from '../support/free-port.js';
import { describeEachMode, sleep } from '../support/modes.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startRelay, type RelayFixture } from '../support/relay.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

let relay: RelayFixture | undefined;
let receivers: Receiver[] = [];
let proxy: TcpProxy | undefined;
afterEach(async () => {
  await relay?.cleanup();
  await Promise.all(receivers.map((r) => r.close()));
  await proxy?.close();
  relay = undefined;
  receivers = [];
  proxy = undefined;
});

const metric = async (port: number | undefined, name: string): Promise<number> => {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
};

describeEachMode('consumer recovery', (mode) => {
  it('a consumer the broker cancels (its queue deleted) is restarted: not ready meanwhile, counted, consuming again', async () => {
    const receiver = await startReceiver(() => ({ status: 200 }));
    receivers = [receiver];
    relay = await startRelay({ DELAY_MODE: mode, LANES: '2', METRICS_PORT: String(await freePort()) });
    const worker = await relay.startWorker();
    let sawNotReady = false;
    const watch = setInterval(() => (sawNotReady ||= !worker.ready), 1);
    try {
      const lane = laneOf(laneBucket(receiver.origin), 2);
      await relay.channel.deleteQueue(relay.names.workQueues[lane]!);
      const deadline = Date.now() + 20_000;
      while (!(sawNotReady && worker.ready) && Date.now() < deadline) await sleep(20);
    } finally {
      clearInterval(watch);
    }
    expect(sawNotReady, '/readyz said not ready while the consumer was gone').toBe(true);
    expect(worker.ready).toBe(true);
    expect(await metric(worker.metricsPort, 'callback_relay_consumer_cancelled_total')).toBeGreaterThanOrEqual(1);
    // The queue was declared again and is consumed: a callback of that lane is delivered.
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/after`, body: 1 });
    await receiver.waitFor((r) => r.some((q) => q.headers['webhook-id'] === id), 20_000);
  });
});

it('messages waiting for a slot on a channel that died are not attempted: the broker redelivers them once', async () => {
  proxy = await startTcpProxy(inject('amqpUrl'));
  const receiver = await startReceiver(() => ({ status: 200, delayMs: 1_000 }));
  receivers = [receiver];
  // The worker reaches the broker through the proxy; the fixture's own connections do not.
  relay = await startRelay({ TARGET_CONCURRENCY: '2', PREFETCH: '20' });
  const worker = await relay.startWorker({}, { amqpUrl: proxy.url });
  const published = await Promise.all(
    Array.from({ length: 20 }, (_, i) => relay!.publisher.publish({ url: `${receiver.origin}/w/${i}`, body: i })),
  );
  await receiver.waitFor((r) => r.length >= 2, 10_000);
  proxy.cut();
  await receiver.waitFor((r) => new Set(r.map((q) => q.headers['webhook-id'])).size === published.length, 60_000);
  await sleep(1_500);
  const counts = new Map<unknown, number>();
  for (const request of receiver.requests) counts.set(request.headers['webhook-id'], (counts.get(request.headers['webhook-id']) ?? 0) + 1);
  const twice = [...counts.values()].filter((count) => count > 1).length;
  // Only the attempts in flight at the cut (TARGET_CONCURRENCY of them) may be repeated.
  expect(twice).toBeLessThanOrEqual(2);
  expect(worker.ready).toBe(true);
});

it('a worker whose broker goes away while it declares the topology at start waits for the broker, then consumes', async () => {
  proxy = await startTcpProxy(inject('amqpUrl'));
  const receiver = await startReceiver(() => ({ status: 200 }));
  receivers = [receiver];
  relay = await startRelay();
  // The start's first connection only inspects the broker; the next one declares the whole topology
  // (tens of kilobytes of declarations) and is cut part-way, as by a broker restart.
  proxy.cutOnceAfter(4_000);
  const worker = await relay.startWorker({}, { amqpUrl: proxy.url });
  const { id } = await relay.publisher.publish({ url: `${receiver.origin}/after-cut`, body: 1 });
  await receiver.waitFor((r) => r.some((q) => q.headers['webhook-id'] === id), 20_000);
  expect(worker.ready).toBe(true);
});
