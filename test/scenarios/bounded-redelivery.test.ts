import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { GetMessage } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { HEADER } from '../../src/message/headers.js';
import { MAX_RETURNS } from '../../src/policy/return-bound.js';
import type { Tracing } from '../../src/tracing/tracing.js';
import { sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import type { RelayFixture } from '../support/relay.js';
import { configEnv } from '../support/worker-process.js';

// Every path that gives a message back to its queue, made to fail for good: the receiver's requests
// are counted, and the message must end parked, never coming back without end. From RabbitMQ 4.3 a
// requeue no longer counts toward a quorum queue's delivery limit, so only the relay's own count can
// end such a loop (docs/delivery.md). Run with AMQP_URL at a 4.3 broker to prove it there.

const run = promisify(execFile);
const open = openedInEachTest();

/** 1 + 2 + 4 + 8 + 16 s of waits before the sixth failure parks it, a topology redeclare per failed hold, and slack for a loaded machine. */
const PARKED_WITHIN_MS = 200_000;

async function cli(relay: RelayFixture, args: string[]): Promise<void> {
  await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    env: { ...process.env, ...configEnv(relay.config), LOG_LEVEL: 'warn' },
  });
}

const header = (message: GetMessage, name: string): unknown => {
  const value: unknown = message.properties.headers?.[name];
  return Buffer.isBuffer(value) ? value.toString() : value;
};

/** Replaces `queue` with one that refuses every publish (a negative confirm), as an operator's max-length policy does. */
async function refuseEverything(relay: RelayFixture, queue: string): Promise<void> {
  await relay.channel.deleteQueue(queue);
  await relay.channel.assertQueue(queue, { durable: true, arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' } });
}

describe('no unbounded redelivery', () => {
  it('EVENTS=durable, the events queue refusing every delivered event: the receiver gets the callback once, never again for its event', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: 'queues', EVENTS: 'durable', PUBLISH_TIMEOUT: '2s' });
    await relay.startWorker();
    // A service's queue bound to P.events with x-max-length and reject-publish, full: every event is nacked.
    const { queue: full } = await relay.channel.assertQueue('', {
      exclusive: true,
      arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' },
    });
    await relay.channel.bindQueue(full, relay.names.eventsExchange, '#');
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/hook`, body: { n: 1 } });
    await receiver.waitFor((r) => r.length === 1, 10_000);
    // On 4.3 this path POSTed 68 times a minute; 15 s is many returns' worth.
    await sleep(15_000);
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]!.headers['webhook-id']).toBe(id);
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  }, 240_000);

  it('a failure before a decision, every time: sent back a bounded number of times, then parked as unsettled', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: 'queues' });
    // A fault in the worker itself, before any request: the pipeline's own requeue path.
    const broken: Tracing = {
      startPublish: () => ({ context: undefined, end: () => {} }) as never,
      startAttempt: () => {
        throw new Error('a fault before the attempt');
      },
      shutdown: async () => {},
    };
    await relay.startWorker({ tracing: Promise.resolve(broken) });
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/hook`, body: { n: 1 } });
    await relay.waitForDead(1, PARKED_WITHIN_MS);
    const [dead] = await relay.drainDead();
    expect(dead!.properties.messageId).toBe(id);
    expect(header(dead!, HEADER.reason)).toBe('unsettled');
    expect(header(dead!, HEADER.returns)).toBe(MAX_RETURNS);
    expect(header(dead!, HEADER.lastError)).toBe('a fault before the attempt');
    expect(receiver.requests).toHaveLength(0);
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
  }, 240_000);

  it('holds that keep failing, from a lane and from P.paused.check: never attempted, never dropped, parked as unsettled', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: 'queues', PUBLISH_TIMEOUT: '2s' });
    await relay.startWorker();
    // A first publish (to another receiver) waits until the publisher has declared its topology, which
    // the refused P.paused below would otherwise make fail, as it would any declaration after it.
    const other = await open.receiver(() => ({ status: 200 }));
    await relay.publisher.publish({ url: `${other.origin}/warm-up`, body: {} });
    await cli(relay, ['target', 'pause', receiver.origin]);
    await sleep(500);
    // P.paused refuses every hold; the worker's redeclare of it fails (another queue holds the name).
    await refuseEverything(relay, relay.names.pausedQueue);
    // One from a lane (the worker's hold), one straight into P.paused.check (the fleet's recirculation).
    const { id: fromLane } = await relay.publisher.publish({ url: `${receiver.origin}/lane`, body: { n: 1 } });
    const fromCheck = 'held-in-check';
    relay.channel.sendToQueue(
      relay.names.pausedCheckQueue,
      Buffer.from(JSON.stringify({ url: `${receiver.origin}/check`, body: { n: 2 } })),
      {
        persistent: true,
        messageId: fromCheck,
        contentType: 'application/json',
      },
    );
    await relay.waitForDead(2, PARKED_WITHIN_MS);
    const dead = await relay.drainDead();
    expect(dead.map((m) => m.properties.messageId).sort()).toEqual([fromLane, fromCheck].sort());
    for (const message of dead) {
      expect(header(message, HEADER.reason)).toBe('unsettled');
      expect(header(message, HEADER.returns)).toBe(MAX_RETURNS);
    }
    expect(receiver.requests).toHaveLength(0);
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
    expect(await relay.messageCount(relay.names.pausedCheckQueue)).toBe(0);
  }, 240_000);
});
