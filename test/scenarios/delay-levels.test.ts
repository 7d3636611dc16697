import { describe, expect, it } from 'vitest';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { createWorker } from '../../src/consumer/worker.js';
import { createLogger } from '../../src/logger.js';
import { createPublisher } from '../../src/producer/publisher.js';
import { declareOnce } from '../../src/topology/connect-topology.js';
import { delayRoutingKey } from '../../src/topology/delay-levels.js';
import { laneBucket, type TopologyNames } from '../../src/topology/topology-names.js';
import { applyDeclarations, queueArguments } from '../../src/topology/declare-list.js';
import { delayLevels, deliveryPath } from '../../src/topology/declare-topology.js';
import { highestFirst } from '../../src/topology/level-layouts.js';
import type { Channel } from 'amqplib';
import type { Receiver } from '../support/receiver.js';
import type { RelayFixture } from '../support/relay.js';

let relay: RelayFixture | undefined;
let receiver: Receiver | undefined;
const open = openedInEachTest();

describe('queues mode delay levels', () => {
  it('any delay arrives on time to about a second, and a long delay never holds up a short one', async () => {
    receiver = await open.receiver(() => ({ status: 200 }));
    relay = await open.relay({ DELAY_MODE: 'queues' });
    await relay.startWorker();
    // A first publish (to another receiver) waits for the publisher's topology declaration, a second or
    // more on 4.3: then the timed publishes below are not held up by it.
    const other = await open.receiver(() => ({ status: 200 }));
    await relay.publisher.publish({ url: `${other.origin}/warm-up`, body: 0 });
    const delays = [7_000, 5_000, 3_000, 1_500, 1_000, 2_000, 6_300];
    const sentAt = new Map<string, number>();
    for (const delay of delays) {
      sentAt.set(`/d${delay}`, Date.now());
      await relay.publisher.publish({ url: `${receiver.origin}/d${delay}`, body: delay }, { delay });
    }
    await receiver.waitFor((r) => r.length === delays.length, 15_000);
    expect(receiver.requests.map((r) => r.path)).toEqual([...delays].sort((a, b) => a - b).map((d) => `/d${d}`));
    for (const request of receiver.requests) {
      const wanted = Math.round(Number(request.path.slice(2)) / 1_000) * 1_000;
      const waited = request.at - (sentAt.get(request.path) ?? 0);
      expect(Math.abs(waited - wanted), `${request.path} waited ${waited} ms`).toBeLessThan(1_000);
    }
  });

  it('declaring the topology again (a second worker, a reconnect) changes nothing', async () => {
    relay = await open.relay({ DELAY_MODE: 'queues' });
    await relay.startWorker();
    await relay.startWorker();
    expect(await relay.messageCount(relay.names.delayLevels[0] as string)).toBe(0);
  });

  it('a prefix declared with other settings stops the worker at start with CR_ERR_TOPOLOGY', async () => {
    relay = await open.relay({ DELAY_MODE: 'queues' });
    await relay.startWorker();
    const other = createWorker({ ...relay.config, queueType: 'classic' }, createLogger('silent'));
    await expect(other.start()).rejects.toMatchObject({
      code: 'CR_ERR_TOPOLOGY',
      message: expect.stringContaining(`prefix "${relay.config.topologyPrefix}"`),
    });
    await other.stop();
  });

  it('an upgrade from one level per bit: what the old levels hold still arrives, and a new delayed callback arrives once', async () => {
    receiver = await open.receiver(() => ({ status: 200 }));
    relay = await open.relay({ DELAY_MODE: 'queues' });
    await declareOnce(relay.config, createLogger('silent'));
    // The deployment before the upgrade: the old levels, bound from P.delay beside the new ones.
    await declareBinaryLevels(relay.channel, relay.names);
    const url = `${receiver.origin}/old`;
    // A retry the old version scheduled: 3 s = levels 1 and 0, entered through the old level 1's exchange.
    relay.channel.publish(
      relay.names.binaryLevels.queues[20] as string,
      `${delayRoutingKey(3, 'binary')}.${laneBucket(receiver.origin)}`,
      Buffer.from(JSON.stringify({ url, body: 'old' })),
      {
        persistent: true,
        contentType: 'application/json',
        messageId: 'old-1',
      },
    );
    await relay.startWorker();
    await relay.publisher.publish({ url: `${receiver.origin}/new`, body: 'new' }, { delay: 3_000 });
    // A producer that writes the binary key itself (the first wire contract): the old levels matched it too.
    publishRaw(
      relay.channel,
      relay.names.delayExchange,
      `${delayRoutingKey(3, 'binary')}.${laneBucket(receiver.origin)}`,
      `${receiver.origin}/binary`,
      'binary-1',
    );
    await receiver.waitFor((requests) => requests.length >= 3, 15_000);
    // Bound twice, a new callback would come a second time through the old levels 2 s later.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    expect(receiver.requests.map((request) => request.path).sort()).toEqual(['/binary', '/new', '/old']);
  });

  it('a producer may spell the delay in hex or in binary: each callback arrives once, when due', async () => {
    receiver = await open.receiver(() => ({ status: 200 }));
    relay = await open.relay({ DELAY_MODE: 'queues' });
    await relay.startWorker();
    const bucket = laneBucket(receiver.origin);
    const sentAt = Date.now();
    // 2,600 ms, as a producer in another language writes it: 2 whole seconds of levels and the due time.
    for (const spelling of ['hex', 'binary'] as const) {
      for (const withBucket of [true, false]) {
        const key = withBucket ? `${delayRoutingKey(2, spelling)}.${bucket}` : delayRoutingKey(2, spelling);
        const path = `/${spelling}-${withBucket ? 'lane' : 'no-bucket'}`;
        publishRaw(relay.channel, relay.names.delayExchange, key, `${receiver.origin}${path}`, path, {
          'x-callback-due-at': sentAt + 2_600,
        });
      }
    }
    await receiver.waitFor((requests) => requests.length >= 4, 15_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(receiver.requests.map((request) => request.path).sort()).toEqual([
      '/binary-lane',
      '/binary-no-bucket',
      '/hex-lane',
      '/hex-no-bucket',
    ]);
    for (const request of receiver.requests) expect(request.at - sentAt, request.path).toBeGreaterThanOrEqual(2_600);
  });

  it('an upgrade from radix 16 visited highest first: only the old levels are unbound, what they hold arrives on time, and a new delayed callback arrives once', async () => {
    receiver = await open.receiver(() => ({ status: 200 }));
    relay = await open.relay({ DELAY_MODE: 'queues' });
    const { names, channel, config } = relay;
    const old = highestFirst(names);
    // The deployment before the upgrade: its lanes, and its levels bound from P.delay, declared as that version did.
    await applyDeclarations(channel, [
      ...deliveryPath(names, { mode: 'queues', queueType: config.queueType, deliveryLimit: config.deliveryLimit }),
      ...delayLevels(names, 'quorum', old),
    ]);
    const bucket = laneBucket(receiver.origin);
    const publishRaw = (exchange: string, seconds: number, path: string): boolean =>
      channel.publish(
        exchange,
        `${delayRoutingKey(seconds, 'binary')}.${bucket}`,
        Buffer.from(JSON.stringify({ url: `${receiver!.origin}${path}`, body: path })),
        {
          persistent: true,
          contentType: 'application/json',
          messageId: path,
        },
      );
    // A retry the old version scheduled for 0x17 s, its 16 s digit waited: 7 s in the old 7 s level, then into the lane.
    const oldSentAt = Date.now();
    publishRaw(old.exchange(1), 0x17, '/old');
    const upgrade = await declareOnce(config, createLogger('silent'));
    expect(upgrade.earlierLevels).toEqual({
      messages: 1,
      levels: [`${names.highFirstLevels.queue(3 * 2 ** 20)} … ${names.highFirstLevels.queue(1)}`],
    });
    await relay.startWorker();
    const workerUpAt = Date.now();
    // 5 s is 4 s through the levels: in the new 4 s level, and no longer in the old one.
    await relay.publisher.publish({ url: `${receiver.origin}/new`, body: 'new' }, { delay: 5_000 });
    expect(await relay.messageCount(names.delayLevel(4))).toBe(1);
    expect(await relay.messageCount(old.queue(4))).toBe(0);
    // P.delay's bindings to the lanes are the same in both versions and stay: a key of 0 s goes straight to its lane.
    publishRaw(names.delayExchange, 0, '/zero');
    await receiver.waitFor((requests) => requests.length >= 3, 15_000);
    // Still bound, the old levels would deliver the new callback a second time, as it arrives.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(receiver.requests.map((request) => request.path).sort()).toEqual(['/new', '/old', '/zero']);
    // The old level lets it out into its lane after 7 s; it is delivered then, or as soon as a worker
    // runs when the upgrade's declarations took longer than that (a loaded machine).
    const waited = receiver.requests.find((request) => request.path === '/old')!.at - oldSentAt;
    const expected = Math.max(7_000, workerUpAt - oldSentAt);
    expect(
      Math.abs(waited - expected),
      `the old level's callback waited ${waited} ms, its worker up after ${workerUpAt - oldSentAt} ms`,
    ).toBeLessThan(1_000);
  });

  it('an upgrade that runs the topology step, then a new publisher before any new worker: its delayed callback arrives once', async () => {
    receiver = await open.receiver(() => ({ status: 200 }));
    relay = await open.relay({ DELAY_MODE: 'queues' });
    await declareBinaryLevels(relay.channel, relay.names);
    // The upgrade's topology step (`callback-relay topology`) unbinds the old levels: publishers declare nothing.
    await declareOnce(relay.config, createLogger('silent'));
    // This publisher connects after the old levels exist, and publishes before any new worker ran.
    const publisher = createPublisher(relay.config, createLogger('silent'));
    try {
      await publisher.publish({ url: `${receiver.origin}/new`, body: 'new' }, { delay: 3_000 });
      // And one whose producer writes the binary key (the first wire contract), which the old levels matched.
      publishRaw(
        relay.channel,
        relay.names.delayExchange,
        `${delayRoutingKey(3, 'binary')}.${laneBucket(receiver.origin)}`,
        `${receiver.origin}/binary`,
        'binary-1',
      );
      await relay.startWorker();
      await receiver.waitFor((requests) => requests.length >= 2, 15_000);
      // Still bound, the old levels would deliver the binary one a second time.
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      expect(receiver.requests.map((request) => request.path).sort()).toEqual(['/binary', '/new']);
    } finally {
      await publisher.close();
    }
  });
});

/** Publishes a callback to `url` with `key` as a producer that writes the key itself does (the wire contract). */
function publishRaw(channel: Channel, exchange: string, key: string, url: string, id: string, headers?: Record<string, unknown>): boolean {
  return channel.publish(exchange, key, Buffer.from(JSON.stringify({ url, body: id })), {
    persistent: true,
    contentType: 'application/json',
    messageId: id,
    headers,
  });
}

/** What the one-level-per-bit version declared: level n waits 2^n s, P.delay and each level's exchange bind the levels below and the lanes. */
async function declareBinaryLevels(channel: Channel, names: TopologyNames): Promise<void> {
  const queues = [...names.binaryLevels.queues].reverse();
  for (const [bit, queue] of queues.entries()) {
    const deadLetter = bit === 0 ? { exchange: '', routingKey: names.workQueue } : { exchange: queues[bit - 1] as string };
    await channel.assertQueue(queue, {
      durable: true,
      arguments: queueArguments({ type: 'quorum', messageTtlMs: 2 ** bit * 1_000, deadLetter }),
    });
  }
  const exchanges = [...queues.slice(0, -1).map((name, top) => ({ name, top })), { name: names.delayExchange, top: 21 }];
  for (const { name, top } of exchanges) {
    await channel.assertExchange(name, 'topic', { durable: true });
    const behind = Array<string>(21 - top).fill('*');
    for (let bit = top; bit >= 0; bit -= 1)
      await channel.bindQueue(queues[bit] as string, name, [...behind, ...Array<string>(top - bit).fill('0'), '1', '#'].join('.'));
    for (const [lane, queue] of names.workQueues.entries()) {
      for (let bucket = lane; bucket < 64; bucket += names.workQueues.length)
        await channel.bindQueue(queue, name, [...behind, ...Array<string>(top + 1).fill('0'), String(bucket)].join('.'));
    }
  }
}
