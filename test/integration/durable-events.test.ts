import type { Channel, ConsumeMessage } from 'amqplib';
import { expect, it } from 'vitest';
import { describeEachMode } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';

const open = openedInEachTest();

const FINAL = new Set(['delivered', 'dead']);

/**
 * The service's side: a queue of its own bound to P.events, read with manual acks, deduplicated on
 * `message_id`, one final outcome per callback id (what the README's status-table consumer does).
 */
async function statusTable(channel: Channel, eventsExchange: string, queue: string) {
  const seen = new Set<string>();
  const finals = new Map<string, string[]>();
  let duplicates = 0;
  await channel.assertExchange(eventsExchange, 'topic', { durable: true });
  await channel.assertQueue(queue, { durable: true });
  await channel.bindQueue(queue, eventsExchange, '#');
  await channel.consume(queue, (message: ConsumeMessage | null) => {
    if (!message) return;
    const eventId = String(message.properties.messageId);
    if (seen.has(eventId)) duplicates += 1;
    else {
      seen.add(eventId);
      const event = JSON.parse(message.content.toString()) as { id: string; type: string };
      if (FINAL.has(event.type)) finals.set(event.id, [...(finals.get(event.id) ?? []), event.type]);
    }
    channel.ack(message);
  });
  return { finals, duplicates: () => duplicates };
}

describeEachMode('durable outcome events', (mode) => {
  it('a worker SIGKILLed mid-flight: the status table gets every callback\'s final outcome, and only that one', async () => {
    // /ok answers 200 slowly (deliveries are in flight at the kill), /flaky 503 once then 200, /gone 410.
    const receiver = await open.receiver((r) => (r.path.startsWith('/gone') ? { status: 410 } : r.path.startsWith('/flaky') && r.nth === 1 ? { status: 503 } : { status: 200, delayMs: 500 }));
    const relay = await open.relay({ DELAY_MODE: mode, EVENTS: 'durable', RETRY_SCHEDULE: '300ms', PREFETCH: '10', TARGET_CONCURRENCY: '10', TARGET_INITIAL_CONCURRENCY: '10' });
    const queue = `${relay.config.topologyPrefix}.status`;
    try {
      const table = await statusTable(relay.channel, relay.names.eventsExchange, queue);
      const paths = Array.from({ length: 30 }, (_, i) => (i % 10 === 0 ? `/gone/${i}` : i % 3 === 0 ? `/flaky/${i}` : `/ok/${i}`));
      const ids = await Promise.all(paths.map((path, i) => relay.publisher.publish({ url: `${receiver.origin}${path}`, body: i }).then((r) => r.id)));
      const worker = open.worker(relay.config);
      await worker.consuming;
      await receiver.waitFor((r) => r.length >= 10);
      worker.child.kill('SIGKILL');
      await worker.exited;
      await relay.startWorker();
      await receiver.waitFor(() => table.finals.size === ids.length, 60_000);
      // A kill between a retry copy's confirm and the ack runs a callback twice (at least once), so
      // it may end twice, as attempt 1 and 2; both are the same final outcome, never a different one.
      for (const [i, id] of ids.entries()) expect(new Set(table.finals.get(id)), paths[i]).toEqual(new Set([paths[i]!.startsWith('/gone') ? 'dead' : 'delivered']));
    } finally {
      await relay.channel.deleteQueue(queue);
    }
  });
});
