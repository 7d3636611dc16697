import amqplib from 'amqplib';
import { describe, expect, inject, it, vi } from 'vitest';
import { dlqEntry } from '../../src/dlq/dlq-entry.js';
import type { OutcomeEvent } from '../../src/events/outcome-events.js';
import { readHistory } from '../../src/history/read-history.js';
import { sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';

const open = openedInEachTest();

describe('URLs shown to people are masked; the delivery gets the whole URL', () => {
  it('outcome events and dead-letter entries carry the URL without its query values and fragment', async () => {
    const receiver = await open.receiver(({ path }) => ({ status: path.startsWith('/gone') ? 404 : 200 }));
    const relay = await open.relay();
    await relay.startWorker();
    const { queue } = await relay.channel.assertQueue('', { exclusive: true });
    await relay.channel.bindQueue(queue, relay.names.eventsExchange, '#');
    const ok = await relay.publisher.publish({ url: `${receiver.origin}/ok?token=s3cret-ok&page=2#frag`, body: 1 });
    await relay.publisher.publish({ url: `${receiver.origin}/gone?sig=s3cret-gone`, body: 2 });
    await relay.waitForDead(1);
    await receiver.waitFor((r) => r.length === 2);
    // The receiver got the whole URL (a fragment is never sent).
    expect(receiver.requests.map((r) => r.path).sort()).toEqual(['/gone?sig=s3cret-gone', '/ok?token=s3cret-ok&page=2']);
    // Outcome events are published after the HTTP response: collect until both are there, then check every one.
    const contents: string[] = [];
    let events: Array<{ id: string; type: string; url: string }> = [];
    await vi.waitFor(
      async () => {
        for (let m = await relay.channel.get(queue, { noAck: true }); m; m = await relay.channel.get(queue, { noAck: true }))
          contents.push(m.content.toString());
        events = contents.map((content) => JSON.parse(content));
        expect({ delivered: events.some((e) => e.id === ok.id), dead: events.some((e) => e.type === 'dead') }).toEqual({
          delivered: true,
          dead: true,
        });
      },
      { timeout: 10_000 },
    );
    for (const content of contents) expect(content).not.toContain('s3cret');
    expect(events.find((e) => e.id === ok.id)).toMatchObject({ type: 'delivered', url: `${receiver.origin}/ok?token=***&page=***` });
    expect(events.find((e) => e.type === 'dead')).toMatchObject({ url: `${receiver.origin}/gone?sig=***` });
    const [dead] = await relay.drainDead();
    // The parked message keeps the whole URL, so a replay delivers it; the entry people read does not.
    expect(JSON.parse(dead!.content.toString()).url).toBe(`${receiver.origin}/gone?sig=s3cret-gone`);
    expect(dlqEntry(dead!, new Date()).url).toBe(`${receiver.origin}/gone?sig=***`);
  });

  it('P.history keeps events masked, and an event stored unmasked (before the change) is read back masked', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ HISTORY: 'on', EVENTS: 'durable' });
    await relay.startWorker();
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/h?token=s3cret-h`, body: 1 });
    await receiver.waitFor((r) => r.length === 1);
    const connection = await amqplib.connect(inject('amqpUrl'));
    /** P.history as it is now, read from its first event. */
    const history = async (): Promise<OutcomeEvent[]> => {
      const read: OutcomeEvent[] = [];
      const channel = await connection.createChannel();
      try {
        await readHistory(channel, relay.names.historyQueue, {
          from: 'first',
          follow: false,
          match: () => true,
          onEvent: (event) => read.push(event),
        });
      } finally {
        await channel.close().catch(() => {});
      }
      return read;
    };
    let events: OutcomeEvent[] = [];
    try {
      // The worker publishes its event after the HTTP response: `old` goes in only once that one is stored, so the order is known.
      await vi.waitFor(async () => expect((await history()).map((e) => e.id)).toContain(id), { timeout: 10_000 });
      const old = {
        type: 'delivered',
        id: 'old-1',
        url: 'https://user:pw@old.example/h?sig=s3cret-old#f',
        attempt: 1,
        worker: 'w/1',
        at: new Date().toISOString(),
      };
      relay.channel.publish(relay.names.eventsExchange, 'delivered', Buffer.from(JSON.stringify(old)), { contentType: 'application/json' });
      for (let tries = 0; tries < 20 && events.length < 2; tries += 1) {
        await sleep(200);
        events = await history();
      }
    } finally {
      await connection.close();
    }
    expect(events.map((e) => [e.id, e.url])).toEqual([
      [id, `${receiver.origin}/h?token=***`],
      ['old-1', 'https://***@old.example/h?sig=***'],
    ]);
  });
});
