import amqplib from 'amqplib';
import { expect, it } from 'vitest';
import { HEADER } from '../../src/message/headers.js';
import { orderBucket, orderedRoute, orderedRoutingKey, orderedShard } from '../../src/topology/topology-names.js';
import { describeEachMode, sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import type { ReceivedRequest } from '../support/receiver.js';
import type { RelayFixture } from '../support/relay.js';
import { cli } from '../support/cli.js';

const open = openedInEachTest();

/** The callbacks' sequence numbers per key, in the order the receiver saw their requests. */
function seenPerKey(requests: ReceivedRequest[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const request of requests) {
    const [, key, n] = request.path.split('/');
    if (key === undefined || n === undefined) continue;
    out.set(key, [...(out.get(key) ?? []), Number(n)]);
  }
  return out;
}

/** No request of a key for callback n+1 before callback n's last request (no crash here: so no repeat after it either). */
function expectInOrder(requests: ReceivedRequest[], count: number): void {
  for (const [key, seen] of seenPerKey(requests)) {
    const sorted = [...seen].sort((a, b) => a - b);
    expect(seen, `key ${key} saw its callbacks out of order`).toEqual(sorted);
    expect(new Set(seen).size, `key ${key}`).toBe(count);
  }
}

async function publishKeys(relay: RelayFixture, origin: string, keys: string[], count: number): Promise<void> {
  // One key's callbacks are published one after another (the order the broker accepts them is the order promised).
  await Promise.all(
    keys.map(async (key) => {
      for (let n = 0; n < count; n += 1) await relay.publisher.publish({ url: `${origin}/${key}/${n}`, body: { key, n }, orderKey: key });
    }),
  );
}

describeEachMode('ordered delivery per key', (mode) => {
  it('retries hold their key, not the others: each key sees its callbacks in order, every one delivered', async () => {
    // Callback 2 of every key fails twice, callback 5 of key k1 once: their keys wait, the rest go on.
    const receiver = await open.receiver(({ path, nth }) => {
      const [, key, n] = path.split('/');
      if (n === '2' && nth <= 2) return { status: 503 };
      if (key === 'k1' && n === '5' && nth === 1) return { status: 500 };
      return { status: 200 };
    });
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '5', ORDERED_SHARDS: '2' });
    await relay.startWorker();
    const keys = ['k0', 'k1', 'k2', 'k3'];
    await publishKeys(relay, receiver.origin, keys, 8);
    await receiver.waitFor(
      (requests) => [...seenPerKey(requests).values()].every((seen) => new Set(seen).size === 8) && seenPerKey(requests).size === 4,
      60_000,
    );
    await sleep(1_500);
    // Repeats are the failed attempts only: 2 for each key's callback 2, 1 for k1's callback 5.
    expect(receiver.requests).toHaveLength(4 * 8 + 4 * 2 + 1);
    expectInOrder(
      receiver.requests.filter((r, i, all) => all.findIndex((o) => o.path === r.path) === i),
      8,
    );
    // Every request of a key after its callback n's first is for n or later.
    for (const [key, seen] of seenPerKey(receiver.requests)) {
      for (let i = 1; i < seen.length; i += 1) expect(seen[i]! >= seen[i - 1]!, `key ${key}: ${seen.join(',')}`).toBe(true);
    }
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });

  it('a parked head lets its key move on; a callback without a key, or of another key, never waits for it', async () => {
    const receiver = await open.receiver(({ path }) => (path.startsWith('/bad/0') ? { status: 500 } : { status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '2', ORDERED_SHARDS: '1' });
    await relay.startWorker();
    await publishKeys(relay, receiver.origin, ['bad'], 4);
    await relay.publisher.publish({ url: `${receiver.origin}/free/0`, body: {} });
    await relay.publisher.publish({ url: `${receiver.origin}/other/0`, body: {}, orderKey: 'other' });
    await receiver.waitFor((requests) => requests.some((r) => r.path === '/free/0') && requests.some((r) => r.path === '/other/0'), 10_000);
    // The two unrelated ones did not wait for bad/0's retry.
    expect(receiver.requests.filter((r) => r.path.startsWith('/bad/')).map((r) => r.path)).toEqual(['/bad/0']);
    await relay.waitForDead(1, 20_000);
    await receiver.waitFor((requests) => requests.some((r) => r.path === '/bad/3'), 20_000);
    expect(receiver.requests.filter((r) => r.path.startsWith('/bad/')).map((r) => r.path)).toEqual([
      '/bad/0',
      '/bad/0',
      '/bad/1',
      '/bad/2',
      '/bad/3',
    ]);
    const [dead] = await relay.drainDead();
    expect(dead?.properties.headers?.[HEADER.reason]).toBe('exhausted');
  });

  it("a producer's own x-order- headers change nothing: a held key's followers keep their order through a takeover", async () => {
    const held = { on: true };
    const receiver = await open.receiver(({ path }) => (path === '/f/0' && held.on ? { status: 503 } : { status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '100', ORDERED_SHARDS: '1' });
    const first = await relay.startWorker();
    await relay.publisher.publish({ url: `${receiver.origin}/f/0`, body: 0, orderKey: 'f' });
    await receiver.waitFor((requests) => requests.length >= 1, 10_000);
    await relay.publisher.publish({ url: `${receiver.origin}/f/1`, body: 1, orderKey: 'f' });
    // Published as any producer could, after /f/1: headers that name log records, a copy's seq before /f/1's.
    const route = orderedRoute(relay.names, mode, 0, orderBucket('f'), Date.now());
    const forged = { 'x-order-renews': 0, 'x-order-behind': 'nobody', 'x-order-record': 'done', 'x-order-offset': 0 };
    const body = Buffer.from(JSON.stringify({ url: `${receiver.origin}/f/2`, body: 2, orderKey: 'f' }));
    const connection = await amqplib.connect(relay.config.amqpUrl);
    const confirmed = await connection.createConfirmChannel();
    confirmed.publish(route.exchange, route.routingKey, body, {
      persistent: true,
      messageId: 'forged-2',
      headers: { ...route.headers, ...forged },
    });
    await confirmed.waitForConfirms();
    await connection.close();
    await sleep(2_000);
    await first.stop();
    await relay.startWorker();
    held.on = false;
    await receiver.waitFor((requests) => requests.some((r) => r.path === '/f/2'), 30_000);
    await sleep(1_000);
    expect(receiver.requests.map((r) => r.path).filter((path) => path !== '/f/0')).toEqual(['/f/1', '/f/2']);
  });

  it("a callback routed to another key's shard is dead-lettered as invalid, naming its own; the key's others are delivered", async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, ORDERED_SHARDS: '2' });
    await relay.startWorker();
    const home = orderedShard(orderBucket('m'), 2);
    const wrong = Array.from({ length: 64 }, (_, bucket) => bucket).find((bucket) => orderedShard(bucket, 2) !== home)!;
    const connection = await amqplib.connect(relay.config.amqpUrl);
    const confirmed = await connection.createConfirmChannel();
    const body = Buffer.from(JSON.stringify({ url: `${receiver.origin}/m/0`, body: 0, orderKey: 'm' }));
    confirmed.publish(relay.names.exchange, orderedRoutingKey(wrong), body, { persistent: true, messageId: 'misrouted' });
    await confirmed.waitForConfirms();
    await connection.close();
    await relay.publisher.publish({ url: `${receiver.origin}/m/1`, body: 1, orderKey: 'm' });
    await relay.waitForDead(1, 10_000);
    const [dead] = await relay.drainDead();
    expect(dead?.properties.messageId).toBe('misrouted');
    expect(dead?.properties.headers?.[HEADER.reason]).toBe('invalid');
    expect(String(dead?.properties.headers?.[HEADER.lastError])).toContain(`orderKey "m" belongs to ordered shard ${home}`);
    await receiver.waitFor((requests) => requests.some((r) => r.path === '/m/1'), 10_000);
    expect(receiver.requests.map((r) => r.path)).toEqual(['/m/1']);
  });

  it('two workers: one owns each shard, and a key keeps its order across them', async () => {
    const receiver = await open.receiver(({ path, nth }) => (path.endsWith('/1') && nth === 1 ? { status: 503 } : { status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '5', ORDERED_SHARDS: '2' });
    await relay.startWorker();
    await relay.startWorker();
    const keys = Array.from({ length: 6 }, (_, i) => `key-${i}`);
    await publishKeys(relay, receiver.origin, keys, 5);
    await receiver.waitFor((requests) => new Set(requests.map((r) => r.path)).size === 30, 60_000);
    await sleep(1_000);
    for (const [key, seen] of seenPerKey(receiver.requests)) {
      for (let i = 1; i < seen.length; i += 1) expect(seen[i]! >= seen[i - 1]!, `key ${key}: ${seen.join(',')}`).toBe(true);
    }
    expect(receiver.requests).toHaveLength(30 + 6);
  });

  // A shard's next consumer (single active consumer) gets the queue's messages as soon as the one before
  // cancels, while that one still holds unacked ones: a stop hands a shard on only by closing it, with a
  // knock so that keys waiting only in the log move on at once. Key s's followers wait in the worker
  // (two at most), key t's in the log.
  it('a worker stopped while heads run hands its shard on after those attempts, at once; each key keeps its order', async () => {
    const receiver = await open.receiver(({ path }) => (path.endsWith('/0') ? { status: 200, delayMs: 3_000 } : { status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, ORDERED_SHARDS: '1', HTTP_TIMEOUT: '20s', DRAIN_TIMEOUT: '20s' });
    const first = await relay.startWorker();
    await relay.startWorker();
    await publishKeys(relay, receiver.origin, ['s'], 3);
    await publishKeys(relay, receiver.origin, ['t'], 5);
    await receiver.waitFor((requests) => requests.length >= 2, 10_000);
    await first.stop();
    // Each head answered 3 s after it arrived: its key's next was not attempted before.
    const gap = (key: string): number => {
      const at = new Map(receiver.requests.map((r) => [r.path, r.at]));
      return at.get(`/${key}/1`)! - at.get(`/${key}/0`)!;
    };
    await receiver.waitFor((requests) => requests.some((r) => r.path === '/s/1'), 10_000);
    expect(gap('s')).toBeGreaterThanOrEqual(2_900);
    // Well before the next periodic knock (30 s).
    await receiver.waitFor((requests) => requests.length >= 8, 20_000);
    expect(gap('t')).toBeGreaterThanOrEqual(2_900);
    expect(seenPerKey(receiver.requests)).toEqual(
      new Map([
        ['s', [0, 1, 2]],
        ['t', [0, 1, 2, 3, 4]],
      ]),
    );
  });

  it('a held head cancelled while it waits is parked when its delay ends, and its key moves on', async () => {
    const receiver = await open.receiver(({ path }) => (path === '/c/0' ? { status: 503 } : { status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '2s', MAX_ATTEMPTS: '5', ORDERED_SHARDS: '1' });
    await relay.startWorker();
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/c/0`, body: {}, orderKey: 'c' });
    await receiver.waitFor((requests) => requests.length === 1, 10_000);
    await relay.publisher.publish({ url: `${receiver.origin}/c/1`, body: {}, orderKey: 'c' });
    await relay.publisher.cancel(id);
    await receiver.waitFor((requests) => requests.some((r) => r.path === '/c/1'), 15_000);
    expect(receiver.requests.map((r) => r.path)).toEqual(['/c/0', '/c/1']);
    const [dead] = await relay.drainDead();
    expect(dead?.properties.headers?.[HEADER.reason]).toBe('canceled');
  });

  it('ORDERED_ON_DEAD=stop: a parked head stops its key until its dead letter is replayed, or the key released', async () => {
    // s/0 and t/0 fail once and are parked at once (MAX_ATTEMPTS 1); a replayed s/0 succeeds.
    const receiver = await open.receiver(({ path, nth }) =>
      (path === '/s/0' || path === '/t/0') && nth === 1 ? { status: 500 } : { status: 200 },
    );
    const relay = await open.relay({ DELAY_MODE: mode, MAX_ATTEMPTS: '1', ORDERED_SHARDS: '1', ORDERED_ON_DEAD: 'stop' });
    await relay.startWorker();
    await publishKeys(relay, receiver.origin, ['s', 't'], 3);
    await relay.waitForDead(2, 15_000);
    await sleep(1_500);
    expect(receiver.requests.map((r) => r.path).sort()).toEqual(['/s/0', '/t/0']);
    // Only s/0 is put back and replayed (t/0 stays out of P.dead); then t is released.
    const dead = await relay.drainDead();
    const t0 = dead.find((m) => JSON.parse(m.content.toString()).orderKey === 't')!;
    const s0 = dead.find((m) => JSON.parse(m.content.toString()).orderKey === 's')!;
    relay.channel.sendToQueue(relay.names.deadQueue, s0.content, { ...s0.properties, headers: s0.properties.headers });
    const replayed = await cli(relay, ['dlq', 'replay', '--all']);
    expect(replayed.code, replayed.stderr).toBe(0);
    await receiver.waitFor((requests) => requests.some((r) => r.path === '/s/2'), 15_000);
    expect(receiver.requests.filter((r) => r.path.startsWith('/s/')).map((r) => r.path)).toEqual(['/s/0', '/s/0', '/s/1', '/s/2']);
    expect(receiver.requests.some((r) => r.path === '/t/1')).toBe(false);
    const released = await cli(relay, ['ordered', 'release', 't']);
    expect(released.code, released.stderr).toBe(0);
    await receiver.waitFor((requests) => requests.some((r) => r.path === '/t/2'), 15_000);
    expect(receiver.requests.filter((r) => r.path.startsWith('/t/')).map((r) => r.path)).toEqual(['/t/0', '/t/1', '/t/2']);
    expect(t0).toBeDefined();
  });
});
