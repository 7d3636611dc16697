import { describe, expect, it } from 'vitest';
import { dlqEntry } from '../../src/dlq/dlq-entry.js';
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
    await sleep(300);
    const events: Array<{ id: string; type: string; url: string }> = [];
    for (let m = await relay.channel.get(queue, { noAck: true }); m; m = await relay.channel.get(queue, { noAck: true })) {
      expect(m.content.toString()).not.toContain('s3cret');
      events.push(JSON.parse(m.content.toString()));
    }
    expect(events.find((e) => e.id === ok.id)).toMatchObject({ type: 'delivered', url: `${receiver.origin}/ok?token=***&page=***` });
    expect(events.find((e) => e.type === 'dead')).toMatchObject({ url: `${receiver.origin}/gone?sig=***` });
    const [dead] = await relay.drainDead();
    // The parked message keeps the whole URL, so a replay delivers it; the entry people read does not.
    expect(JSON.parse(dead!.content.toString()).url).toBe(`${receiver.origin}/gone?sig=s3cret-gone`);
    expect(dlqEntry(dead!, new Date()).url).toBe(`${receiver.origin}/gone?sig=***`);
  });
});
