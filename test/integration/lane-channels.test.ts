import amqplib, { type ChannelModel, type ConfirmChannel, type ConsumeMessage } from 'amqplib';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createLaneChannels } from '../../src/consumer/lane-channels.js';
import { createLogger } from '../../src/logger.js';
import { randomPrefix } from '../support/relay.js';

// Each consumed queue on a channel of its own (src/consumer/lane-channels.ts), against the real broker.
let connection: ChannelModel;
let queues: [string, string][];
const received: { lane: string; channel: ConfirmChannel; message: ConsumeMessage }[] = [];
const closed: ConfirmChannel[] = [];
let stopping = false;
let redeclared = 0;

async function declare(): Promise<void> {
  const setup = await connection.createChannel();
  for (const [queue] of queues) await setup.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await setup.close();
}

beforeEach(async () => {
  connection = await amqplib.connect(inject('amqpUrl'));
  connection.on('error', () => {});
  const prefix = randomPrefix();
  queues = [
    [`${prefix}.work`, '0'],
    [`${prefix}.work.1`, '1'],
  ];
  await declare();
  redeclared = 0;
  received.length = 0;
  closed.length = 0;
  stopping = false;
});

afterEach(async () => {
  stopping = true;
  const cleanup = await connection.createChannel().catch(() => undefined);
  for (const [queue] of queues) await cleanup?.deleteQueue(queue).catch(() => {});
  await connection.close().catch(() => {});
});

function lanes() {
  return createLaneChannels({
    onMessage: (message, channel, lane) => {
      if (message) received.push({ lane, channel, message });
    },
    closed: (channel) => closed.push(channel),
    stopping: () => stopping,
    closeOnStop: () => false,
    redeclare: async () => {
      redeclared += 1;
      await declare();
    },
    logger: createLogger('silent'),
  });
}

async function publish(queue: string, body: string): Promise<void> {
  const channel = await connection.createConfirmChannel();
  channel.sendToQueue(queue, Buffer.from(body), { persistent: true });
  await channel.waitForConfirms();
  await channel.close();
}

async function until(done: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

it("consumes each queue on a channel of its own, with the prefetch asked for, or the queue's own", async () => {
  const channels = lanes();
  // The worker gives P.slow a window of its own (no room for holds): here lane 1.
  await channels.open(connection, [queues[0]!, [...queues[1]!, 2] as const], 3);
  expect(channels.consuming()).toBe(true);
  for (let i = 0; i < 5; i += 1) for (const [queue] of queues) await publish(queue, `${queue}/${i}`);
  await until(() => received.length >= 5);
  await new Promise((resolve) => setTimeout(resolve, 300));
  // Unacked, each consumer holds its prefetch and no more.
  expect(received.filter((r) => r.lane === '0')).toHaveLength(3);
  expect(received.filter((r) => r.lane === '1')).toHaveLength(2);
  const [zero, one] = ['0', '1'].map((lane) => new Set(received.filter((r) => r.lane === lane).map((r) => r.channel)));
  expect(zero!.size).toBe(1);
  expect(one!.size).toBe(1);
  expect([...zero!][0]).not.toBe([...one!][0]);
});

it('a lane whose channel the broker closes (an unknown delivery tag acked) is reported closed and consumed again on a new channel; the other lane is untouched', async () => {
  await lanes().open(connection, queues, 10);
  await publish(queues[0]![0], 'a');
  await publish(queues[1]![0], 'b');
  await until(() => received.length === 2);
  const first = received.find((r) => r.lane === '0')!;
  const other = received.find((r) => r.lane === '1')!;
  // PRECONDITION_FAILED closes lane 0's channel only: its unacked message goes back to its queue.
  first.channel.ack({ ...first.message, fields: { ...first.message.fields, deliveryTag: 9_999 } });
  await until(() => closed.length === 1);
  expect(closed[0]).toBe(first.channel);
  // Redelivered on the lane's new channel once it is opened again.
  await until(() => received.filter((r) => r.lane === '0').length === 2);
  const again = received.filter((r) => r.lane === '0')[1]!;
  expect(again.channel).not.toBe(first.channel);
  expect(again.message.fields.redelivered).toBe(true);
  again.channel.ack(again.message);
  // Lane 1 kept its channel and its message.
  other.channel.ack(other.message);
  await publish(queues[1]![0], 'c');
  await until(() => received.filter((r) => r.lane === '1').length === 2);
  expect(received.filter((r) => r.lane === '1')[1]!.channel).toBe(other.channel);
});

it("cancel() stops every consumer; a second open() closes the first one's channels", async () => {
  const channels = lanes();
  await channels.open(connection, queues, 10);
  await channels.open(connection, queues, 10);
  await until(() => closed.length === 2);
  await channels.cancel();
  await publish(queues[0]![0], 'late');
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(received).toHaveLength(0);
});

it('a lane whose queue is missing when it is opened (a 404 closes its channel) is consumed once the topology is declared again; not consuming meanwhile', async () => {
  const cleanup = await connection.createChannel();
  await cleanup.deleteQueue(queues[1]![0]);
  await cleanup.close();
  const channels = lanes();
  await channels.open(connection, queues, 10);
  expect(channels.consuming()).toBe(false);
  await until(() => channels.consuming());
  expect(redeclared).toBeGreaterThanOrEqual(1);
  await publish(queues[1]![0], 'after');
  await until(() => received.some((r) => r.lane === '1'));
});

it('coalesces acks without ever settling a message still held: closing the channel returns exactly the held ones', async () => {
  const channels = lanes();
  await channels.open(connection, queues, 20);
  const [queue] = queues[0]!;
  for (let i = 1; i <= 12; i += 1) await publish(queue, `m${i}`);
  await until(() => received.length >= 12);
  const held = new Set(['m3', 'm8']);
  // Out of order, as fair scheduling settles them; m3 and m8 stay held.
  const order = [5, 1, 2, 12, 4, 6, 7, 10, 9, 11].map((n) => received.find((r) => r.message.content.toString() === `m${n}`)!);
  for (const { channel, message } of order) channel.ack(message);
  await new Promise((resolve) => setImmediate(resolve));
  channels.flushAcks();
  // Let the acks reach the broker before the channel closes.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const first = received[0]!.channel;
  received.length = 0;
  await first.close();
  await until(() => received.length >= 2);
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(new Set(received.map((r) => r.message.content.toString()))).toEqual(held);
  expect(received.every((r) => r.message.fields.redelivered)).toBe(true);
});

it('close() gets every ack to the broker before the connection closes: none of the acked messages comes back', async () => {
  const channels = lanes();
  await channels.open(connection, queues, 1_000);
  const perQueue = 400;
  const publisher = await connection.createConfirmChannel();
  for (const [queue] of queues)
    for (let i = 0; i < perQueue; i += 1) publisher.sendToQueue(queue, Buffer.from(`${queue}/${i}`), { persistent: true });
  await publisher.waitForConfirms();
  await publisher.close();
  await until(() => received.length === 2 * perQueue);
  // Newest first, as fair scheduling may settle them; gathered, not yet sent.
  for (const { channel, message } of [...received].reverse()) channel.ack(message);
  await channels.close();
  await connection.close();
  // Unacked messages would be back in their queues as soon as the connection is gone.
  connection = await amqplib.connect(inject('amqpUrl'));
  connection.on('error', () => {});
  await new Promise((resolve) => setTimeout(resolve, 500));
  const check = await connection.createChannel();
  for (const [queue] of queues) expect((await check.checkQueue(queue)).messageCount, queue).toBe(0);
  await check.close();
});
