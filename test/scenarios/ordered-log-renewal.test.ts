import amqplib from 'amqplib';
import { expect, it } from 'vitest';
import { recordOf } from '../../src/ordering/log-records.js';
import { openOrderLog } from '../../src/ordering/order-log.js';
import { readAll } from '../../src/ordering/read-all.js';
import { replay, type LogRecord } from '../../src/policy/key-log.js';
import { ORDERED_LOG_SEGMENT_BYTES } from '../../src/topology/declare-ordered.js';
import { brokerCtl } from '../support/broker-ctl.js';
import { describeEachMode, sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import type { RelayFixture } from '../support/relay.js';

const open = openedInEachTest();

/** The shard's log, read whole (nothing appended). */
async function logEntries(relay: RelayFixture): Promise<Array<{ offset: number; record: LogRecord }>> {
  const connection = await amqplib.connect(relay.config.amqpUrl);
  try {
    const log = await openOrderLog(connection, relay.names.orderedLogs[0]!);
    const entries: Array<{ offset: number; record: LogRecord }> = [];
    await readAll(log, ({ offset, headers }) => {
      const record = recordOf(headers);
      if (record) entries.push({ offset, record });
    });
    await log.close();
    return entries;
  } finally {
    await connection.close();
  }
}

/** Waits until `test` holds of the log. */
async function logUntil(relay: RelayFixture, test: (entries: Array<{ offset: number; record: LogRecord }>) => boolean, ms: number) {
  const end = Date.now() + ms;
  for (;;) {
    const entries = await logEntries(relay);
    if (test(entries)) return entries;
    if (Date.now() > end) throw new Error(`the log did not get there within ${ms} ms: ${JSON.stringify(entries.map((e) => e.record))}`);
    await sleep(1_000);
  }
}

/** More than a log segment's worth of messages that are no records (ORDERED_LOG_SEGMENT_BYTES): the stream starts a new segment. */
async function fill(relay: RelayFixture, stream: string): Promise<void> {
  const connection = await amqplib.connect(relay.config.amqpUrl);
  try {
    const channel = await connection.createConfirmChannel();
    const body = Buffer.alloc(100_000, 'f');
    for (let i = 0; i < Math.ceil(ORDERED_LOG_SEGMENT_BYTES / body.length) + 5; i += 1) channel.sendToQueue(stream, body);
    await channel.waitForConfirms();
  } finally {
    await connection.close();
  }
}

const copies = (entries: Array<{ record: LogRecord }>): number =>
  entries.filter(({ record }) => record.kind === 'follower' && record.renews !== undefined).length;

describeEachMode('the ordered log renewed past its retention', (mode) => {
  it('a key held past the renewal age has its hold and followers written again; the log after the renewal alone resumes it, each callback once, in order', async () => {
    const held = { on: true };
    const receiver = await open.receiver(({ path }) => (path === '/r/0' && held.on ? { status: 503 } : { status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '2s', MAX_ATTEMPTS: '100', ORDERED_SHARDS: '1' });
    const first = await relay.startWorker({ orderedLogRenewAfterMs: 1_000 });
    const ids: string[] = [];
    for (let n = 0; n < 4; n += 1)
      ids.push((await relay.publisher.publish({ url: `${receiver.origin}/r/${n}`, body: { n }, orderKey: 'r' })).id);
    await receiver.waitFor((requests) => requests.length >= 1, 10_000);

    // Renewed at least twice: a copy of each follower, then a copy of each copy.
    const entries = await logUntil(relay, (all) => copies(all) >= 6, 40_000);
    const whole = replay(entries).get('r');
    expect(whole).toMatchObject({ head: ids[0] });
    expect(whole?.followers).toHaveLength(3);
    // Retention drops the oldest part of a stream: cut the log at the last renewal's claim.
    const claims = entries.filter(({ record }) => record.kind === 'claim' && record.first !== undefined);
    const cut = claims[claims.length - 1]!.offset;
    const renewed = replay(entries.filter(({ offset }) => offset >= cut)).get('r');
    expect(renewed?.head).toBe(ids[0]);
    expect(renewed?.followers).toHaveLength(3);
    expect(renewed?.followers.every(({ offset }) => offset > cut)).toBe(true);
    // The followers in the cut log are the callbacks 1, 2, 3, in that order.
    const byOffset = new Map(entries.map(({ offset, record }) => [offset, record]));
    expect(renewed?.followers.map(({ offset }) => (byOffset.get(offset) as { id: string }).id)).toEqual(ids.slice(1));

    // For real where the test may administer the broker: a policy lowers the log's age to 2 s (the
    // lower of the two counts), and filler fills its segments, since retention drops whole segments
    // once a new one starts. The worker renews the key meanwhile; the log keeps only what follows.
    const ctl = brokerCtl();
    if (ctl) {
      const stream = relay.names.orderedLogs[0]!;
      const vhost = decodeURIComponent(new URL(relay.config.amqpUrl).pathname.slice(1)) || '/';
      await ctl([
        'set_policy',
        '-p',
        vhost,
        `${stream}-age`,
        `^${stream.replace(/[.]/g, '\\.')}$`,
        '{"max-age":"2s"}',
        '--apply-to',
        'queues',
      ]);
      const last = (await logEntries(relay)).at(-1)!.offset;
      await fill(relay, stream);
      await logUntil(
        relay,
        (all) => all.some(({ offset, record }) => offset > last && record.kind === 'claim' && record.first !== undefined),
        20_000,
      );
      await sleep(2_500);
      await fill(relay, stream);
      // Everything up to the policy is gone, the shard's first claim with it.
      const trimmed = await logUntil(relay, (all) => (all[0]?.offset ?? 0) > last, 20_000);
      expect(trimmed.some(({ record }) => record.kind === 'claim' && record.first === undefined)).toBe(false);
      expect(replay(trimmed).get('r')).toMatchObject({
        head: ids[0],
        followers: [expect.any(Object), expect.any(Object), expect.any(Object)],
      });
    }

    // Another worker takes the shard over from the log as it is, and the key moves on once its head succeeds.
    await first.stop();
    await relay.startWorker();
    held.on = false;
    await receiver.waitFor((requests) => requests.some((r) => r.path === '/r/3'), 30_000);
    await sleep(1_500);
    const paths = receiver.requests.map((r) => r.path).filter((path) => path !== '/r/0');
    expect(paths).toEqual(['/r/1', '/r/2', '/r/3']);
    const lastHead = receiver.requests.map((r) => r.path).lastIndexOf('/r/0');
    expect(receiver.requests.findIndex((r) => r.path === '/r/1')).toBeGreaterThan(lastHead);
  });

  it('a busy key is renewed all the same: arrivals and retries go on while its followers are read and copied, and it drains in order', async () => {
    const held = { on: true };
    const receiver = await open.receiver(({ path }) => (path === '/b/0' && held.on ? { status: 503 } : { status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '1000', ORDERED_SHARDS: '1' });
    await relay.startWorker({ orderedLogRenewAfterMs: 1_000 });
    const publish = (n: number) => relay.publisher.publish({ url: `${receiver.origin}/b/${n}`, body: { n }, orderKey: 'b' });
    await publish(0);
    await receiver.waitFor((requests) => requests.length >= 1, 10_000);
    // One arrival every 200 ms while the worker renews (each sweep, the renewal age being 1 s).
    let n = 1;
    const start = Date.now();
    while (Date.now() - start < 15_000) {
      await publish(n);
      n += 1;
      await sleep(200);
    }
    // The worker logs an arrival after consuming it: wait until the last one is in the log.
    const entries = await logUntil(relay, (all) => replay(all).get('b')?.followers.length === n - 1, 10_000);
    const [claim] = entries.filter(({ record }) => record.kind === 'claim');
    // Renewed claims name the first one; copies were written while followers kept arriving.
    expect(entries.some(({ record }) => record.kind === 'claim' && record.first === claim!.offset)).toBe(true);
    const copied = entries.filter(({ record }) => record.kind === 'follower' && record.renews !== undefined);
    const arrived = entries.filter(({ record }) => record.kind === 'follower' && record.renews === undefined);
    expect(copied.length).toBeGreaterThan(0);
    expect(arrived.some(({ offset }) => offset > copied[0]!.offset)).toBe(true);
    expect(replay(entries).get('b')?.followers).toHaveLength(n - 1);

    held.on = false;
    await receiver.waitFor((requests) => requests.some((r) => r.path === `/b/${n - 1}`), 60_000);
    await sleep(1_500);
    const paths = receiver.requests.map((r) => r.path).filter((path) => path !== '/b/0');
    expect(paths).toEqual(Array.from({ length: n - 1 }, (_, i) => `/b/${i + 1}`));
  });
});

describeEachMode('what the ordered log keeps of a retried head', (mode) => {
  it('one hold, however often the head is held again: retries (and rechecks of a paused target) do not grow the log', async () => {
    const receiver = await open.receiver(({ path, nth }) => (path === '/r/0' && nth <= 4 ? { status: 503 } : { status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '10', ORDERED_SHARDS: '1' });
    await relay.startWorker();
    for (const n of [0, 1]) await relay.publisher.publish({ url: `${receiver.origin}/r/${n}`, body: n, orderKey: 'r' });
    await receiver.waitFor((requests) => requests.some((r) => r.path === '/r/1'), 30_000);
    expect(receiver.requests.map((r) => r.path)).toEqual(['/r/0', '/r/0', '/r/0', '/r/0', '/r/0', '/r/1']);
    const holds = (await logEntries(relay)).filter(({ record }) => record.kind === 'hold');
    expect(holds).toHaveLength(1);
  });
});
