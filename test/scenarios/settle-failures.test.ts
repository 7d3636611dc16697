import type { GetMessage } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { HEADER } from '../../src/message/headers.js';
import { freePort } from '../support/free-port.js';
import { describeEachMode } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { queueDepth } from '../support/queue-depth.js';
import type { RelayFixture } from '../support/relay.js';

const open = openedInEachTest();

const header = (message: GetMessage, name: string): string | undefined => {
  const value: unknown = message.properties.headers?.[name];
  return value === undefined ? undefined : String(value);
};

/** The one message P.dead holds once it holds one. */
async function theDeadMessage(relay: RelayFixture): Promise<GetMessage> {
  await relay.waitForDead(1, 20_000);
  const dead = await relay.drainDead();
  expect(dead).toHaveLength(1);
  return dead[0]!;
}

const metric = async (port: number, line: string): Promise<number | undefined> => {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
};

describeEachMode('settle failures', (mode) => {
  it('P.dead deleted under a running worker: the topology is declared again and the dead-letter copy stored', async () => {
    const receiver = await open.receiver(() => ({ status: 404 }));
    const relay = await open.relay({ DELAY_MODE: mode });
    await relay.startWorker();
    await relay.channel.deleteQueue(relay.names.deadQueue);
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/gone`, body: 1 });
    await queueDepth(relay.names.deadQueue, 20_000);
    const dead = await theDeadMessage(relay);
    expect(dead.properties.messageId).toBe(id);
    expect(header(dead, HEADER.reason)).toBe('rejected');
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
  });

  it('headers too large for a copy: dead-lettered as invalid before any attempt; later copies still confirm', async () => {
    const receiver = await open.receiver(({ nth }) => ({ status: nth === 1 ? 503 : 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '1s' });
    await relay.startWorker();
    const callback = { url: `${receiver.origin}/big`, body: 1 };
    // 63 KiB of producer headers: the retry copy, with the x-callback-* headers added, would not encode.
    relay.channel.sendToQueue(relay.names.workQueue, Buffer.from(JSON.stringify(callback)), {
      messageId: 'big-headers',
      headers: { 'x-big': 'x'.repeat(63 * 1_024) },
    });
    const dead = await theDeadMessage(relay);
    expect(dead.properties.messageId).toBe('big-headers');
    expect(header(dead, HEADER.reason)).toBe('invalid');
    expect(header(dead, HEADER.lastError)).toMatch(/^headers are \d+ bytes encoded/);
    expect(receiver.requests).toHaveLength(0);
    // The channel still matches confirms to publishes: a retry copy goes through and is delivered.
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/small`, body: 2 });
    await receiver.waitFor((requests) => requests.length === 2);
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual([id, id]);
  });
});

describe('settle failures [queues mode]', () => {
  it('a delay level queue deleted under a running worker: the retry copy is stored once it exists again, and delivered', async () => {
    const receiver = await open.receiver(({ nth }) => ({ status: nth === 1 ? 503 : 200 }));
    const relay = await open.relay({ DELAY_MODE: 'queues', RETRY_SCHEDULE: '2s', RETRY_JITTER: '0' });
    await relay.startWorker();
    // A 2 s delay goes through the 1 s level only (the worker holds it for the rest).
    await relay.channel.deleteQueue(relay.names.delayLevel(1));
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/flaky`, body: 1 });
    await receiver.waitFor((requests) => requests.length === 2);
    expect(receiver.requests.map((r) => [r.headers['webhook-id'], r.headers['x-callback-attempt'] ?? '1'])).toEqual([
      [id, '1'],
      [id, '2'],
    ]);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });

  it('a retry copy nacked (a full reject-publish queue on its route): the original is rejected into P.dead, not left unsettled', async () => {
    const receiver = await open.receiver(() => ({ status: 503 }));
    const port = await freePort();
    const relay = await open.relay({ DELAY_MODE: 'queues', RETRY_SCHEDULE: '1h', METRICS_PORT: String(port) });
    await relay.startWorker();
    // What an operator's max-length policy does: the broker refuses the copy with a nack.
    const { queue: full } = await relay.channel.assertQueue('', {
      exclusive: true,
      arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' },
    });
    await relay.channel.bindQueue(full, relay.names.delayExchange, '#');
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/down`, body: 1 });
    const dead = await theDeadMessage(relay);
    expect(dead.properties.messageId).toBe(id);
    // Dead-lettered by the broker itself, from P.work, because the worker rejected it.
    expect(header(dead, 'x-first-death-reason')).toBe('rejected');
    expect(header(dead, 'x-first-death-queue')).toBe(relay.names.workQueue);
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
    expect(await metric(port, 'callback_relay_settle_fallbacks_total{kind="retry",cause="nacked"}')).toBe(1);
  });
});
