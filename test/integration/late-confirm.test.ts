import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, expect, it } from 'vitest';
import { findRabbitmqServer, startLocalBroker, type LocalNode } from '../support/local-broker.js';
import { sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';

// A retry copy whose confirm comes later than PUBLISH_TIMEOUT, because a memory alarm blocks the
// worker's connection (https://www.rabbitmq.com/docs/connection-blocked). The copy may be stored, so
// the worker must wait for the broker's answer: rejecting the original too would leave the callback
// both retried and parked. A throwaway node of our own: the alarm blocks every publisher on it.

const run = promisify(execFile);
let node: LocalNode | undefined;
// Registered before the relay's and receiver's: it runs after them (afterEach hooks run last-first).
afterEach(async () => {
  await node?.stop();
  node = undefined;
});
const open = openedInEachTest();
const serverBin = findRabbitmqServer();

async function setWatermark(node: LocalNode, bin: string, value: string): Promise<void> {
  await run(join(dirname(bin), 'rabbitmqctl'), ['-n', node.node, 'set_vm_memory_high_watermark', value], { env: { ...process.env, HOME: node.home }, timeout: 60_000 });
}

it.skipIf(serverBin === undefined)('a retry copy unconfirmed past PUBLISH_TIMEOUT (a blocked connection) is waited for: retried once unblocked, never also parked', async () => {
  const bin = serverBin as string;
  const started = await startLocalBroker(bin);
  node = started;
  try {
    let blocked: Promise<void> | undefined;
    const receiver = await open.receiver((request) => {
      if (request.headers['x-callback-attempt'] !== undefined) return { status: 200 };
      // The alarm goes up while the first attempt is answered: the retry copy meets a blocked connection.
      blocked = setWatermark(started, bin, '0.0000001');
      return { status: 503, delayMs: 3_000 };
    });
    const relay = await open.relay({ AMQP_URL: node.url, DELAY_MODE: 'queues', RETRY_SCHEDULE: '1s', PUBLISH_TIMEOUT: '1s' });
    await relay.startWorker();
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/hook`, body: { n: 1 } });
    await receiver.waitFor((r) => r.length === 1, 30_000);
    await blocked;
    // Well past PUBLISH_TIMEOUT: the original was neither rejected to P.dead nor acked.
    await sleep(6_000);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    expect(receiver.requests).toHaveLength(1);
    await setWatermark(started, bin, '0.4');
    await receiver.waitFor((r) => r.length === 2, 60_000);
    expect(receiver.requests[1]!.headers['webhook-id']).toBe(id);
    expect(receiver.requests[1]!.headers['x-callback-attempt']).toBe('2');
    await sleep(2_000);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    expect(receiver.requests).toHaveLength(2);
  } finally {
    await setWatermark(started, bin, '0.4').catch(() => {});
  }
}, 240_000);
