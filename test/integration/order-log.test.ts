import amqplib, { type Channel, type ChannelModel } from 'amqplib';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { toOffset, type LogEntry } from '../../src/ordering/log-entry.js';
import { openOrderLog, type OrderLog } from '../../src/ordering/order-log.js';
import { readAll, READ_ALL_QUIET_MS } from '../../src/ordering/read-all.js';
import { randomPrefix } from '../support/relay.js';

const STREAM = { 'x-queue-type': 'stream' };

/** Waits until `check` holds, polling. */
async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Follows `log` from `from`, collecting entries until `count` arrived, then stops. */
async function collect(log: OrderLog, from: 'first' | number, count: number): Promise<LogEntry[]> {
  const entries: LogEntry[] = [];
  const stop = await log.follow(from, (entry) => entries.push(entry));
  await until(() => entries.length >= count);
  await stop();
  return entries;
}

describe('order log on a stream', () => {
  let connection: ChannelModel;
  let admin: Channel;
  let stream: string;
  let log: OrderLog;

  beforeEach(async () => {
    connection = await amqplib.connect(inject('amqpUrl'));
    admin = await connection.createChannel();
    stream = `${randomPrefix()}.ordered.log.0`;
    await admin.assertQueue(stream, { durable: true, arguments: STREAM });
    log = await openOrderLog(connection, stream, { readTimeoutMs: 1_000 });
  });

  afterEach(async () => {
    await log.close();
    await admin.deleteQueue(stream).catch(() => {});
    await connection.close().catch(() => {});
  });

  const append = async (n: number, from = 0): Promise<void> => {
    for (let i = from; i < from + n; i += 1) await log.append({ 'x-n': i }, Buffer.from(`record ${i}`));
  };

  it('follows from the first record in order with increasing offsets, then records appended later', async () => {
    await log.append({ kind: 'small' });
    await append(3, 1);
    const entries: LogEntry[] = [];
    const stop = await log.follow('first', (entry) => entries.push(entry));
    await until(() => entries.length === 4);
    expect(entries[0]).toMatchObject({ headers: { kind: 'small' }, properties: {}, body: Buffer.alloc(0) });
    expect(entries.slice(1).map((e) => [e.headers, e.body.toString()])).toEqual([1, 2, 3].map((i) => [{ 'x-n': i }, `record ${i}`]));
    const offsets = entries.map((e) => e.offset);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    expect(new Set(offsets).size).toBe(4);
    await append(2, 4);
    await until(() => entries.length === 6);
    expect(entries.slice(4).map((e) => e.headers['x-n'])).toEqual([4, 5]);
    expect(entries[5]!.offset).toBeGreaterThan(entries[3]!.offset);
    await stop();
    await log.append({ 'x-n': 6 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(entries).toHaveLength(6);
  });

  it('reads exactly the record at an offset, also in the middle of a chunk, and follows from an offset skipping earlier ones', async () => {
    // Appended concurrently, so the broker writes them in chunks of many records; on a loaded broker the
    // last chunk may hold one record only: then another batch is appended (at most five in all).
    const n = 300;
    let all: LogEntry[] = [];
    let middle = -1;
    for (let batch = 0; batch < 5 && middle < 0; batch += 1) {
      await Promise.all(Array.from({ length: n }, (_, i) => log.append({ 'x-n': batch * n + i }, Buffer.from(`record ${batch * n + i}`))));
      all = await collect(log, 'first', (batch + 1) * n);
      // 'last' starts at the first record of the last chunk: the records after it are mid-chunk.
      const raw = await connection.createChannel();
      await raw.prefetch(10);
      const chunkStart = await new Promise<number>((resolve) => {
        void raw.consume(stream, (m) => m && resolve(Number(m.properties.headers?.['x-stream-offset'])), {
          arguments: { 'x-stream-offset': 'last' },
        });
      });
      await raw.close();
      middle = all.findIndex((e) => e.offset > chunkStart);
    }
    expect(all.map((e) => e.headers['x-n'])).toEqual(Array.from({ length: all.length }, (_, i) => i));
    expect(middle, 'a record in the middle of the last chunk').toBeGreaterThan(0);
    const last = all.length - 1;
    for (const i of [0, 1, n / 2, middle, last]) expect(await log.read(all[i]!.offset)).toEqual(all[i]);
    const later = await collect(log, all[middle]!.offset, all.length - middle);
    expect(later).toEqual(all.slice(middle));
  });

  it('round-trips a follower record: body, headers and properties as given', async () => {
    const body = Buffer.from(JSON.stringify({ id: 'cb-1', url: 'https://example.test/h', body: { a: [1, 2, 'ü'] } }), 'utf8');
    const headers = {
      'x-callback-copy': '123.4',
      'x-attempt': 3,
      'x-big': 2 ** 40,
      'x-ratio': 0.25,
      'x-flag': true,
      'x-nested': { a: 'b', n: 7 },
      'x-list': ['one', 2, { deep: [true] }],
      'x-bytes': Buffer.from([0, 1, 255]),
      'x-none': null,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    };
    const properties = {
      messageId: 'cb-1',
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      timestamp: 1_764_633_600,
      correlationId: 'corr-9',
      type: 'callback',
      appId: 'producer-a',
      priority: 5,
    };
    await log.append({ kind: 'marker' });
    await log.append(headers, body, properties);
    const [, follower] = await collect(log, 'first', 2);
    expect(follower!.body.equals(body)).toBe(true);
    expect(follower!.headers).toEqual(headers);
    expect(follower!.properties).toEqual(properties);
    expect(await log.read(follower!.offset)).toEqual(follower);
  });

  it('keeps call order for concurrent appends', async () => {
    const n = 300;
    await Promise.all(Array.from({ length: n }, (_, i) => log.append({ 'x-n': i })));
    const entries = await collect(log, 'first', n);
    expect(entries.map((e) => e.headers['x-n'])).toEqual(Array.from({ length: n }, (_, i) => i));
  });

  it('readAll reads a log to its end and stops, appending nothing; an empty log ends once quiet', async () => {
    const empty = Date.now();
    await expect(readAll(log, () => {})).resolves.toBe(0);
    expect(Date.now() - empty).toBeLessThan(READ_ALL_QUIET_MS + 1_000);
    const n = 500;
    await Promise.all(Array.from({ length: n }, (_, i) => log.append({ 'x-n': i }, Buffer.alloc(200, 1))));
    const seen: unknown[] = [];
    await expect(readAll(log, (entry) => seen.push(entry.headers['x-n']))).resolves.toBe(n);
    expect(seen).toEqual(Array.from({ length: n }, (_, i) => i));
    // Read again: the same records, none added by the reads.
    await expect(readAll(log, () => {})).resolves.toBe(n);
    await expect(readAll(log, () => {}, { timeoutMs: 1 })).rejects.toMatchObject({ code: 'CR_ERR_LOG_READ_TIMEOUT' });
  });

  it('close stops follows; a closed log refuses appends', async () => {
    const entries: LogEntry[] = [];
    await log.follow('first', (entry) => entries.push(entry));
    await append(1);
    await until(() => entries.length === 1);
    await log.close();
    const other = await openOrderLog(connection, stream);
    await other.append({ 'x-n': 1 });
    await other.close();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(entries).toHaveLength(1);
    await expect(log.append({})).rejects.toMatchObject({ code: 'CR_ERR_CLOSED' });
  });

  it('CR_ERR_LOG_READ_TIMEOUT past the end; undefined for an offset retention removed', async () => {
    await append(2);
    const [, last] = await collect(log, 'first', 2);
    await expect(log.read(last!.offset + 5)).rejects.toMatchObject({ code: 'CR_ERR_LOG_READ_TIMEOUT' });
    // Tiny segments and size limit: retention drops the oldest segments as new ones are written.
    const small = `${stream}.small`;
    await admin.assertQueue(small, {
      durable: true,
      arguments: { ...STREAM, 'x-max-length-bytes': 2_000, 'x-stream-max-segment-size-bytes': 500 },
    });
    const trimmed = await openOrderLog(connection, small, { readTimeoutMs: 1_000 });
    try {
      for (let i = 0; i < 60; i += 1) await trimmed.append({ 'x-n': i }, Buffer.alloc(100, 1));
      // Retention runs on the broker's own schedule: the first record found may be trimmed before it is
      // read again, so read the first one still there.
      let first: LogEntry | undefined;
      let again: LogEntry | undefined;
      for (let tries = 0; tries < 10 && again === undefined; tries += 1) {
        [first] = await collect(trimmed, 'first', 1);
        again = await trimmed.read(first!.offset);
      }
      expect(first!.offset).toBeGreaterThan(0);
      expect(await trimmed.read(0)).toBeUndefined();
      // Offsets are not dense: each new segment starts with a chunk of the broker's own (offsets no record has).
      expect(again?.headers).toEqual(first!.headers);
    } finally {
      await trimmed.close();
      await admin.deleteQueue(small);
    }
  });

  it('CR_ERR_LOG_MISSING for a stream that does not exist; CR_ERR_PUBLISH_RETURNED once it was deleted', async () => {
    await expect(openOrderLog(connection, `${stream}.missing`)).rejects.toMatchObject({ code: 'CR_ERR_LOG_MISSING' });
    const ended: unknown[] = [];
    await log.follow(
      'first',
      () => {},
      (error) => ended.push(error),
    );
    await admin.deleteQueue(stream);
    await expect(log.append({ 'x-n': 0 })).rejects.toMatchObject({ code: 'CR_ERR_PUBLISH_RETURNED' });
    await until(() => ended.length === 1);
    expect(ended[0]).toMatchObject({ code: 'CR_ERR_CLOSED' });
    await expect(log.read(0)).rejects.toMatchObject({ code: 'CR_ERR_LOG_MISSING' });
  });

  it('takes offsets as numbers or bigints, past 2^31', () => {
    expect(toOffset(2 ** 33)).toBe(2 ** 33);
    expect(toOffset(BigInt(2 ** 33) + BigInt(1))).toBe(2 ** 33 + 1);
    expect([toOffset(-1), toOffset(1.5), toOffset(BigInt(2) ** BigInt(60)), toOffset('7')]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});
