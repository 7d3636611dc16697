import amqplib, { type ChannelModel, type ConsumeMessage } from 'amqplib';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDueMover, type DueMover } from '../../src/consumer/move-due.js';
import { isRelayError } from '../../src/errors.js';
import { createLogger } from '../../src/logger.js';
import { orderBucket, orderedRoute, orderedShard } from '../../src/topology/topology-names.js';
import { describeEachMode, sleep, type TestMode } from '../support/modes.js';
import { startRelay, type RelayFixture } from '../support/relay.js';

// The contract's side of ordered delivery against the real broker: publish() puts a callback with an
// orderKey in its key's shard, and a delayed ordered message comes back into that shard (through P.due
// and the mover in plugin mode, through the delay levels in queues mode). Nothing consumes the shards
// here: their consumer is the worker's.

const SHARDS = 4;

/** A key whose bucket lands in `shard`, and one per other shard: found by hashing, so the test needs no fixed table. */
function keyFor(shard: number, avoid: string[] = []): string {
  for (let i = 0; ; i += 1) {
    const key = `tenant-${i}`;
    if (orderedShard(orderBucket(key), SHARDS) === shard && !avoid.includes(key)) return key;
  }
}

describeEachMode('ordered callbacks reach their shard', (mode: TestMode) => {
  let relay: RelayFixture;
  let side: ChannelModel;
  let mover: DueMover | undefined;

  beforeAll(async () => {
    relay = await startRelay({ DELAY_MODE: mode, ORDERED_SHARDS: String(SHARDS) });
    side = await amqplib.connect(relay.config.amqpUrl);
    // Plugin mode: what a worker does with P.due, without the rest of the worker.
    if (mode === 'plugin') {
      mover = createDueMover(relay.names, 10, createLogger('silent'));
      mover.attach(side);
    }
  }, 60_000);

  afterAll(async () => {
    await mover?.close();
    await side?.close();
    await relay?.cleanup();
  }, 60_000);

  /**
   * Takes `count` messages out of `queue`, in queue order, by consuming it: a single active consumer
   * queue refuses basic.get (405 RESOURCE_LOCKED), so channel.get cannot look into a shard.
   */
  async function take(queue: string, count: number, withinMs = 5_000): Promise<ConsumeMessage[]> {
    const channel = await side.createChannel();
    const messages: ConsumeMessage[] = [];
    try {
      const { consumerTag } = await channel.consume(queue, (message) => message && messages.push(message), { noAck: true });
      for (const deadline = Date.now() + withinMs; messages.length < count && Date.now() < deadline;) await sleep(20);
      await channel.cancel(consumerTag);
      return messages;
    } finally {
      await channel.close().catch(() => {});
    }
  }

  it('publish() puts each key in its shard, in the order published, and nothing in the lanes', async () => {
    const first = keyFor(1);
    const second = keyFor(1, [first]);
    const other = keyFor(3);
    const url = 'http://127.0.0.1:9/hook';
    const ids: string[] = [];
    for (const [i, orderKey] of [first, second, first, other, first].entries()) {
      ids.push((await relay.publisher.publish({ url, body: i, orderKey, id: `ordered-${i}` })).id);
    }
    const shard1 = await take(relay.names.orderedQueues[1]!, 4);
    expect(shard1.map((message) => message.properties.messageId)).toEqual(['ordered-0', 'ordered-1', 'ordered-2', 'ordered-4']);
    expect(shard1.map((message) => message.fields.routingKey)).toEqual(
      [first, second, first, first].map((key) => `ordered.${orderBucket(key)}`),
    );
    expect(JSON.parse(shard1[0]!.content.toString())).toMatchObject({ orderKey: first, body: 0 });
    expect((await take(relay.names.orderedQueues[3]!, 1)).map((message) => message.properties.messageId)).toEqual(['ordered-3']);
    for (const shard of [0, 2]) expect(await relay.messageCount(relay.names.orderedQueues[shard]!)).toBe(0);
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
  });

  it('publish() refuses an ordered callback with a first-attempt delay, publishing nothing', async () => {
    const error = await relay.publisher
      .publish({ url: 'http://127.0.0.1:9/hook', body: 0, orderKey: 'k' }, { delay: 5_000 })
      .catch((failure: unknown) => failure);
    expect(isRelayError(error, 'CR_ERR_INVALID_CALLBACK') && error.field).toBe('delay');
  });

  it.each([1_000, 2_500])(
    'a message sent by orderedRoute with a delay of %i ms lands in its shard once due',
    async (delayMs) => {
      const key = keyFor(2);
      const bucket = orderBucket(key);
      const shard = relay.names.orderedQueues[2]!;
      const channel = await side.createConfirmChannel();
      try {
        const sentAt = Date.now();
        const route = orderedRoute(relay.names, mode, delayMs, bucket, sentAt);
        // 2.5 s goes through a delay level in queues mode; 1 s goes to the shard at once, carrying its due time.
        if (mode === 'queues') expect(route.exchange).toBe(delayMs > 1_250 ? relay.names.delayExchange : relay.names.exchange);
        channel.publish(
          route.exchange,
          route.routingKey,
          Buffer.from(JSON.stringify({ url: 'http://127.0.0.1:9/hook', body: 0, orderKey: key })),
          {
            persistent: true,
            messageId: `delayed-${delayMs}`,
            headers: route.headers,
          },
        );
        await channel.waitForConfirms();
        const [message] = await take(shard, 1, delayMs + 10_000);
        if (!message) throw new Error(`nothing arrived in ${shard}`);
        const arrivedAfter = Date.now() - sentAt;
        expect(message.properties.messageId).toBe(`delayed-${delayMs}`);
        expect(message.fields.routingKey).toBe(mode === 'queues' && delayMs > 1_250 ? route.routingKey : `ordered.${bucket}`);
        if (mode === 'plugin') {
          // Moved on by the mover: not before it fell due.
          expect(arrivedAfter).toBeGreaterThanOrEqual(delayMs - 50);
        } else {
          // The levels let it out up to LEVEL_LEAD_MS + 1 s early; the worker holds it until its due time.
          expect(message.properties.headers?.['x-callback-due-at']).toBe(sentAt + delayMs);
        }
        for (const other of [0, 1, 3]) expect(await relay.messageCount(relay.names.orderedQueues[other]!)).toBe(0);
        expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
      } finally {
        await channel.close().catch(() => {});
      }
    },
    30_000,
  );
});
