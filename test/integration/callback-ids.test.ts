import { describe, expect, it } from 'vitest';
import { sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';

const open = openedInEachTest();

describe('callback ids', () => {
  it('a message with neither id nor message_id keeps its webhook-id when the broker redelivers it', async () => {
    const receiver = await open.receiver(({ nth }) => (nth === 1 ? 'hang' : { status: 200 }));
    const relay = await open.relay({ DELAY_MODE: 'queues' });
    const worker = open.worker(relay.config);
    await worker.consuming;
    // Published by hand: no `id` in the body, no message_id property.
    relay.channel.sendToQueue(relay.names.workQueue, Buffer.from(JSON.stringify({ url: `${receiver.origin}/no-id`, body: { n: 1 } })), {
      persistent: true,
    });
    await receiver.waitFor((requests) => requests.length === 1);
    worker.child.kill('SIGKILL');
    await worker.exited;
    await relay.startWorker();
    await receiver.waitFor((requests) => requests.length === 2);
    const [first, second] = receiver.requests.map((r) => r.headers['webhook-id']);
    expect(first).toMatch(/^msg_/);
    expect(second).toBe(first);
  });

  it('a callback id of 255 characters still gets its outcome event (the event message_id stays within 255 bytes)', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: 'queues' });
    await relay.startWorker();
    const { queue } = await relay.channel.assertQueue('', { exclusive: true });
    await relay.channel.bindQueue(queue, relay.names.eventsExchange, '#');
    const id = 'i'.repeat(255);
    await relay.publisher.publish({ id, url: `${receiver.origin}/long-id`, body: 1 });
    await receiver.waitFor((requests) => requests.length === 1);
    let event = await relay.channel.get(queue, { noAck: true });
    for (const deadline = Date.now() + 10_000; !event && Date.now() < deadline; event = await relay.channel.get(queue, { noAck: true }))
      await sleep(100);
    expect(event && JSON.parse(event.content.toString())).toMatchObject({ type: 'delivered', id });
    expect(Buffer.byteLength(String(event && event.properties.messageId))).toBeLessThanOrEqual(255);
  });
});
