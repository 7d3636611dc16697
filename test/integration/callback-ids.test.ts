import { describe, expect, it } from 'vitest';
import { openedInEachTest } from '../support/opened-in-each-test.js';

const open = openedInEachTest();

describe('callback ids', () => {
  it('a message with neither id nor message_id keeps its webhook-id when the broker redelivers it', async () => {
    const receiver = await open.receiver(({ nth }) => (nth === 1 ? 'hang' : { status: 200 }));
    const relay = await open.relay({ DELAY_MODE: 'queues' });
    const worker = open.worker(relay.config);
    await worker.consuming;
    // Published by hand: no `id` in the body, no message_id property.
    relay.channel.sendToQueue(relay.names.workQueue, Buffer.from(JSON.stringify({ url: `${receiver.origin}/no-id`, body: { n: 1 } })), { persistent: true });
    await receiver.waitFor((requests) => requests.length === 1);
    worker.child.kill('SIGKILL');
    await worker.exited;
    await relay.startWorker();
    await receiver.waitFor((requests) => requests.length === 2);
    const [first, second] = receiver.requests.map((r) => r.headers['webhook-id']);
    expect(first).toMatch(/^msg_/);
    expect(second).toBe(first);
  });
});
