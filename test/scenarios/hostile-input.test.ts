import type { ConsumeMessage } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RelayError } from '../../src/errors.js';
import type { Callback } from '../../src/message/callback.js';
import { HEADER } from '../../src/message/headers.js';
import type { PublishOptions } from '../../src/producer/publisher.js';
import { badMessage, goodCallback, oversized } from '../support/hostile-messages.js';
import { sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { queueDepth } from '../support/queue-depth.js';
import { startRelay, type RelayFixture } from '../support/relay.js';
import { mulberry32 } from '../support/prng.js';

const SEED = 0x5eed_2024;
const TOTAL = 10_000;
const GOOD_EVERY = 20;
const BATCH = 500;
/** Indexes that get a message over MAX_PAYLOAD_BYTES (heavy, so only a few). */
const OVERSIZED_AT = new Set([1_233, 5_677, 9_001]);

const open = openedInEachTest();

/** Takes `count` messages off `queue` with a consumer (much faster than basic.get for thousands). */
async function consumeAll(fixture: RelayFixture, queue: string, count: number, timeoutMs = 30_000): Promise<ConsumeMessage[]> {
  const messages: ConsumeMessage[] = [];
  let done: () => void = () => {};
  const enough = new Promise<void>((resolve) => (done = resolve));
  const { consumerTag } = await fixture.channel.consume(
    queue,
    (message) => {
      if (message) messages.push(message);
      if (messages.length >= count) done();
    },
    { noAck: true },
  );
  await Promise.race([enough, sleep(timeoutMs)]);
  await fixture.channel.cancel(consumerTag);
  return messages;
}

const lines = (output: string, pattern: RegExp): string[] => output.split('\n').filter((line) => pattern.test(line));

describe('hostile input (queues mode)', () => {
  it(`${TOTAL} random and malformed messages: every bad one is dead-lettered as invalid, every good one delivered once, the worker never restarts`, async () => {
    // 300 s, not the suite's 120: at load 12-15 on 2 shared cores, publishing the 10,000 alone took
    // longer than 120 s (19-42 s at load 6-12; in CI the whole test took 20-27 s on 4.3 and 3.10 alike).
    const started = Date.now();
    const rng = mulberry32(SEED);
    const receiver = await open.receiver(() => ({ status: 200 }));
    // A long HTTP_TIMEOUT: "delivered once" is about the input, and a machine starved of CPU must not
    // turn a slow answer into a timeout and a second delivery (at least once, by design).
    const relay = await open.relay({ DELAY_MODE: 'queues', PREFETCH: '100', HTTP_TIMEOUT: '20s' });
    const worker = open.worker(relay.config);
    await worker.consuming; // the worker has declared the topology: raw publishes are routed
    const pid = worker.child.pid;

    const bad = new Map<number, { kind: string; content: Buffer; messageId: string | undefined }>();
    const good = new Map<string, { body: unknown }>();
    const kinds = new Map<string, number>();
    for (let batchStart = 0; batchStart < TOTAL; batchStart += BATCH) {
      for (let i = batchStart; i < Math.min(TOTAL, batchStart + BATCH); i += 1) {
        if (i % GOOD_EVERY === GOOD_EVERY - 1) {
          const { id, path, content } = goodCallback(rng, receiver.origin, i);
          good.set(path, { body: JSON.parse(content.toString('utf8')).body });
          relay.channel.publish(relay.names.exchange, 'deliver', content, {
            messageId: id,
            persistent: true,
            contentType: 'application/json',
          });
          continue;
        }
        const { kind, content } = OVERSIZED_AT.has(i)
          ? { kind: 'over MAX_PAYLOAD_BYTES', content: oversized(receiver.origin) }
          : badMessage(rng, receiver.origin);
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
        // Hostile AMQP properties too: no message_id, unreadable retry headers, a forged reason, odd content types.
        const messageId = rng() < 0.8 ? `bad-${i}` : undefined;
        const headers: Record<string, unknown> = { 'x-test-seq': i };
        if (rng() < 0.2) headers[HEADER.attempt] = [-3, 0, 2.5, 'abc', '', null][Math.floor(rng() * 6)];
        if (rng() < 0.1) headers[HEADER.reason] = 'rejected';
        bad.set(i, { kind, content, messageId });
        relay.channel.publish(relay.names.exchange, 'deliver', content, {
          headers,
          persistent: rng() < 0.5,
          ...(messageId === undefined ? {} : { messageId }),
          ...(rng() < 0.3
            ? { contentType: ['text/plain', 'application/octet-stream', 'application/json; charset=latin1'][Math.floor(rng() * 3)] }
            : {}),
        });
      }
      // A round trip on the same channel: the broker has taken this batch before the next one is sent.
      await relay.channel.checkQueue(relay.names.workQueue);
    }
    const publishedAt = Date.now();
    expect(bad.size + good.size).toBe(TOTAL);
    expect(good.size).toBe(TOTAL / GOOD_EVERY);

    await relay.waitForDead(bad.size, 60_000);
    await receiver.waitFor((requests) => requests.length >= good.size, 30_000);
    const settledAt = Date.now();
    const dead = await consumeAll(relay, relay.names.deadQueue, bad.size);

    // Every bad message, and only those, is in P.dead: reason invalid, no attempt, body unchanged.
    expect(dead).toHaveLength(bad.size);
    const seen = new Set<number>();
    const wrong: string[] = [];
    for (const message of dead) {
      const headers = message.properties.headers ?? {};
      const seq = Number(headers['x-test-seq']);
      const sent = bad.get(seq);
      seen.add(seq);
      if (!sent) {
        wrong.push(`unexpected dead message ${message.properties.messageId}`);
        continue;
      }
      const problems = [
        headers[HEADER.reason] !== 'invalid' && `reason ${String(headers[HEADER.reason])}`,
        headers[HEADER.attempts] !== 0 && `attempts ${String(headers[HEADER.attempts])}`,
        !(typeof headers[HEADER.lastError] === 'string' && headers[HEADER.lastError] !== '') && 'no last error',
        !message.content.equals(sent.content) && 'body changed',
        sent.messageId !== undefined && message.properties.messageId !== sent.messageId && `message id ${message.properties.messageId}`,
        sent.messageId === undefined && !/^msg_[A-Za-z0-9_-]{43}$/.test(String(message.properties.messageId)) && 'no derived id',
      ].filter(Boolean);
      if (problems.length > 0) wrong.push(`#${seq} (${sent.kind}): ${problems.join(', ')}`);
    }
    expect(wrong).toEqual([]);
    expect(seen.size).toBe(bad.size);

    // Every good callback reached the receiver exactly once, with its id and its body.
    const paths = receiver.requests.map((r) => r.path);
    expect(new Set(paths).size).toBe(paths.length);
    expect(new Set(paths)).toEqual(new Set(good.keys()));
    for (const request of receiver.requests) {
      expect(request.headers['webhook-id']).toBe(`good-${request.path.slice('/good/'.length)}`);
      expect(JSON.parse(request.body)).toEqual(good.get(request.path)?.body);
    }

    await sleep(1_000);
    expect(receiver.requests).toHaveLength(good.size);
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
    expect(await relay.messageCount(relay.names.slowQueue)).toBe(0);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);

    // The worker process never restarted, never crashed, never lost its channel and logged every invalid one.
    const output = worker.output();
    expect(worker.child.pid).toBe(pid);
    expect(worker.child.exitCode).toBeNull();
    expect(worker.child.signalCode).toBeNull();
    expect(lines(output, /"msg":"consuming"/)).toHaveLength(1);
    // Its one consuming line tells how long each step of the start took (docs/operations.md#logs).
    const start = (JSON.parse(lines(output, /"msg":"consuming"/)[0] as string) as { start: Record<string, number> }).start;
    expect(Object.keys(start)).toEqual(['topologyMs', 'controlMs', 'presenceMs', 'consumeMs']);
    for (const ms of Object.values(start)) expect(ms).toBeGreaterThanOrEqual(0);
    expect(lines(output, /"level":(50|60)|uncaught|unhandled|could not settle|disconnected|FATAL|RangeError|TypeError/i)).toEqual([]);
    expect(lines(output, /"reason":"invalid"/)).toHaveLength(bad.size);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    console.info(
      `hostile input: ${bad.size} bad (${kinds.size} kinds) + ${good.size} good; published in ${publishedAt - started} ms, settled after ${settledAt - publishedAt} ms`,
    );
  }, 300_000);

  // undici refuses other control characters, DEL, characters above U+00FF and `expect` before any
  // connection: such callbacks must be invalid, not retried until exhausted.
  it('header values or names the HTTP client refuses are invalid, not retried until exhausted', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: 'queues', RETRY_SCHEDULE: '200ms', MAX_ATTEMPTS: '2' });
    const inProcess = await relay.startWorker();
    const unsendable = [
      { 'x-a': 'bell\u0007' },
      { 'x-a': 'del\u007f' },
      { 'x-a': 'Ā wide' },
      { 'x-a': '\u{1F600}' },
      { expect: '100-continue' },
    ];
    for (const [i, headers] of unsendable.entries()) {
      relay.channel.publish(
        relay.names.exchange,
        'deliver',
        Buffer.from(JSON.stringify({ url: `${receiver.origin}/h/${i}`, body: i, headers })),
        { messageId: `h-${i}` },
      );
    }
    await relay.waitForDead(unsendable.length, 15_000);
    const dead = await relay.drainDead();
    expect(receiver.requests).toHaveLength(0);
    // The dead-letter copy is confirmed before the original is acked: the last ack may still be on its way.
    await vi.waitFor(() => expect(inProcess.inFlight).toBe(0), { timeout: 10_000 });
    expect(dead.map((m) => [m.properties.messageId, m.properties.headers?.[HEADER.reason]])).toEqual(
      unsendable.map((_, i) => [`h-${i}`, 'invalid']),
    );
  });

  // JSON.parse accepts nesting that JSON.stringify cannot re-serialise: decode must catch it, or the
  // message would stay unacked and hold its target's slot.
  it('a body nested too deep to re-serialise is dead-lettered as invalid and does not block its target', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: 'queues', TARGET_INITIAL_CONCURRENCY: '2', DRAIN_TIMEOUT: '1s' });
    const inProcess = await relay.startWorker();
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    for (const i of [1, 2]) {
      relay.channel.publish(relay.names.exchange, 'deliver', Buffer.from(`{"url":"${receiver.origin}/deep/${i}","body":${deep}}`), {
        messageId: `deep-${i}`,
      });
    }
    await sleep(500);
    await relay.publisher.publish({ url: `${receiver.origin}/after`, body: 'same target' });
    await receiver.waitFor((requests) => requests.some((r) => r.path === '/after'), 5_000);
    await relay.waitForDead(2, 5_000);
    expect((await relay.drainDead()).map((m) => m.properties.headers?.[HEADER.reason])).toEqual(['invalid', 'invalid']);
    await inProcess.stop();
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
  });

  // An AMQP message_id holds 255 bytes at most; a longer id must be refused, not break settling.
  it('a callback with a 256-character id (the documented maximum) that needs a retry is settled', async () => {
    const receiver = await open.receiver(() => ({ status: 500 }));
    const relay = await open.relay({ DELAY_MODE: 'queues', RETRY_SCHEDULE: '200ms', MAX_ATTEMPTS: '2' });
    const inProcess = await relay.startWorker();
    const id = 'i'.repeat(256);
    relay.channel.publish(relay.names.exchange, 'deliver', Buffer.from(JSON.stringify({ id, url: `${receiver.origin}/long-id`, body: 1 })));
    await relay.publisher.publish({ id: 'next', url: `${receiver.origin}/next`, body: 2 });
    await relay.waitForDead(2, 6_000);
    const reasons = new Map(
      (await relay.drainDead()).map((m) => [JSON.parse(m.content.toString()).id, m.properties.headers?.[HEADER.reason]]),
    );
    expect(['invalid', 'exhausted']).toContain(reasons.get(id));
    expect(reasons.get('next')).toBe('exhausted');
    await inProcess.stop();
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
  });
});

type Row = [label: string, callback: unknown, options: PublishOptions | undefined, field: string];
const circular: Record<string, unknown> = {};
circular.self = circular;
const manyHeaders = { ...Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`x-h-${i}`, 'v'])), 'Transfer-Encoding': 'chunked' };
const ok = { url: 'http://127.0.0.1:9/hook', body: { a: 1 } };
const INVALID: Row[] = [
  ['no url', { body: 1 }, undefined, 'url'],
  ['empty url', { ...ok, url: '' }, undefined, 'url'],
  ['url a number', { ...ok, url: 42 }, undefined, 'url'],
  ['javascript: url', { ...ok, url: 'javascript:alert(1)' }, undefined, 'url'],
  ['ftp url', { ...ok, url: 'ftp://127.0.0.1/x' }, undefined, 'url'],
  ['relative url', { ...ok, url: '/hooks/x' }, undefined, 'url'],
  ['unparsable url', { ...ok, url: 'http://exa mple.com/' }, undefined, 'url'],
  ['10k-character url', { ...ok, url: `http://127.0.0.1:9/${'a'.repeat(10_000)}` }, undefined, 'url'],
  ['no body', { url: ok.url }, undefined, 'body'],
  ['body undefined', { ...ok, body: undefined }, undefined, 'body'],
  ['body a function', { ...ok, body: () => 1 }, undefined, 'body'],
  ['body a BigInt', { ...ok, body: 1n }, undefined, 'body'],
  ['circular body', { ...ok, body: circular }, undefined, 'body'],
  ['body nested 100k deep', { ...ok, body: JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) }, undefined, 'body'],
  ['body over MAX_PAYLOAD_BYTES', { ...ok, body: 'x'.repeat(1_100_000) }, undefined, 'body'],
  ['headers an array', { ...ok, headers: ['x-a', 'b'] }, undefined, 'headers'],
  ['headers a string', { ...ok, headers: 'x-a: b' }, undefined, 'headers'],
  ['headers null', { ...ok, headers: null }, undefined, 'headers'],
  ['header value an object', { ...ok, headers: { 'x-a': { v: 1 } } }, undefined, 'headers.x-a'],
  ['header value a number', { ...ok, headers: { 'x-a': 5 } }, undefined, 'headers.x-a'],
  ['header name with a space', { ...ok, headers: { 'x a': 'v' } }, undefined, 'headers.x a'],
  ['reserved header content-type', { ...ok, headers: { 'Content-Type': 'text/plain' } }, undefined, 'headers.Content-Type'],
  ['reserved header host', { ...ok, headers: { host: 'evil.example' } }, undefined, 'headers.host'],
  ['forged webhook-id', { ...ok, headers: { 'webhook-id': 'forged' } }, undefined, 'headers.webhook-id'],
  ['header injection', { ...ok, headers: { 'x-a': 'v\r\nInjected: 1' } }, undefined, 'headers.x-a'],
  ['header value over 8192 characters', { ...ok, headers: { 'x-long': 'v'.repeat(8_193) } }, undefined, 'headers.x-long'],
  ['500 headers, the last reserved', { ...ok, headers: manyHeaders }, undefined, 'headers.Transfer-Encoding'],
  ['method GET', { ...ok, method: 'GET' }, undefined, 'method'],
  ['method lower case', { ...ok, method: 'post' }, undefined, 'method'],
  ['id a number', { ...ok, id: 42 }, undefined, 'id'],
  ['empty id', { ...ok, id: '' }, undefined, 'id'],
  ['id with a leading space', { ...ok, id: ' x' }, undefined, 'id'],
  ['id not ASCII', { ...ok, id: 'zoë' }, undefined, 'id'],
  ['id of 257 characters', { ...ok, id: 'i'.repeat(257) }, undefined, 'id'],
  ['unknown field', { ...ok, extra: true }, undefined, 'extra'],
  ['callback null', null, undefined, 'callback'],
  ['callback an array', [ok], undefined, 'callback'],
  ['callback a string', JSON.stringify(ok), undefined, 'callback'],
  ['negative delay', ok, { delay: -1 }, 'delay'],
  ['NaN delay', ok, { delay: Number.NaN }, 'delay'],
  ['delay beyond the delay levels', ok, { delay: 2 ** 22 * 1_000 }, 'delay'],
  ['both delay and deliverAt', ok, { delay: 1, deliverAt: new Date() }, 'delay'],
  ['invalid deliverAt', ok, { deliverAt: new Date('nope') }, 'deliverAt'],
];

describe('hostile input: producer validation', () => {
  let fixture: RelayFixture;
  beforeAll(async () => {
    fixture = await startRelay({ DELAY_MODE: 'queues' });
  });
  afterAll(async () => {
    await fixture.cleanup();
  });

  it.each(INVALID.map(([label, callback, options, field]) => ({ label, callback, options, field })))(
    '$label → CR_ERR_INVALID_CALLBACK on $field',
    async ({ callback, options, field }) => {
      const attempt = fixture.publisher.publish(callback as Callback, options);
      await expect(attempt).rejects.toBeInstanceOf(RelayError);
      await expect(attempt).rejects.toMatchObject({ code: 'CR_ERR_INVALID_CALLBACK', field });
    },
  );

  it('after all of them, P.work and P.dead hold nothing (no worker was started)', async () => {
    await sleep(300);
    expect(await queueDepth(fixture.names.workQueue)).toBe(0);
    expect(await queueDepth(fixture.names.deadQueue)).toBe(0);
  });
});

describe('hostile input: producer validation gaps', () => {
  // The same rule at publish time: refused, never queued.
  it.each([['bell\u0007'], ['Ā wide'], ['del\u007f']])('a header value undici refuses (%j) is refused at publish', async (value) => {
    const relay = await open.relay({ DELAY_MODE: 'queues' });
    await expect(relay.publisher.publish({ ...ok, headers: { 'x-a': value } })).rejects.toMatchObject({
      code: 'CR_ERR_INVALID_CALLBACK',
      field: 'headers.x-a',
    });
  });

  // A 256-character id would make amqplib throw after queueing its confirm callback, shifting every later
  // confirm: it must be refused naming the field.
  it('an id of 256 characters is either published or refused naming the field; publish() never resolves for a lost message', async () => {
    const relay = await open.relay({ DELAY_MODE: 'queues', PUBLISH_TIMEOUT: '10s' });
    await relay.publisher.publish({ ...ok, id: 'warm-up' });
    const long = relay.publisher.publish({ ...ok, id: 'i'.repeat(256) });
    long.catch(() => {}); // judged below, after the later publishes
    await sleep(100);
    const after = relay.publisher.publish({ ...ok, id: 'after' });
    await sleep(100);
    const last = relay.publisher.publish({ ...ok, id: 'last' });
    const results = await Promise.allSettled([long, after, last]);
    const queued: string[] = [];
    for (
      let m = await relay.channel.get(relay.names.workQueue, { noAck: true });
      m;
      m = await relay.channel.get(relay.names.workQueue, { noAck: true })
    ) {
      queued.push(JSON.parse(m.content.toString()).id);
    }
    const [longResult] = results;
    if (longResult?.status === 'rejected') expect(longResult.reason).toMatchObject({ code: 'CR_ERR_INVALID_CALLBACK', field: 'id' });
    else expect(queued).toContain('i'.repeat(256));
    expect(results.slice(1).map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
  });
});
