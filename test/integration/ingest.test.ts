import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { itemDigest } from '../../src/ingest/callback-ids.js';
import { createLogger } from '../../src/logger.js';
import { startIngest, type RunningIngest } from '../../src/ingest/start-ingest.js';
import { freePort } from '../support/free-port.js';
import { sleep } from '../support/modes.js';
import { queueDepth } from '../support/queue-depth.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { testConfig, type RelayFixture } from '../support/relay.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

const TOKEN = 'integration-token-0123456789';
const OTHER_TOKEN = 'other-tenant-token-0123456789';
const open = openedInEachTest();
let ingest: RunningIngest | undefined;
let proxy: TcpProxy | undefined;
/** Sockets of hand-written requests: a request left unfinished would hold the ingest's close. */
const rawSockets: Socket[] = [];
afterEach(async () => {
  for (const socket of rawSockets.splice(0)) socket.destroy();
  await ingest?.close();
  await proxy?.close();
  ingest = undefined;
  proxy = undefined;
});

/** An ingest on port 0 for `relay`'s topology; `env` overrides its settings (e.g. AMQP_URL). */
async function startIngestFor(relay: RelayFixture, env: Record<string, string> = {}): Promise<RunningIngest> {
  const config = testConfig({ TOPOLOGY_PREFIX: relay.config.topologyPrefix, INGEST_TOKENS: `other:${OTHER_TOKEN},acme:${TOKEN}`, ...env });
  ingest = await startIngest(config, createLogger(config.logLevel), 0);
  return ingest;
}

async function post(
  origin: string,
  path: string,
  payload: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers },
    body: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/**
 * POSTs a callback, and again (the same request) after each 503, as a client told to send it again does;
 * at most 5 times. `refusals` holds each 503's code and message, for the assertion's message.
 */
async function postUntilAccepted(
  origin: string,
  payload: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, any>; refusals: string }> {
  const refusals: string[] = [];
  let answer = await post(origin, '/v1/callbacks', payload, headers);
  for (let tries = 1; answer.status === 503 && tries < 5; tries += 1) {
    refusals.push(`${answer.body.code}: ${answer.body.message}`);
    await sleep(500);
    answer = await post(origin, '/v1/callbacks', payload, headers);
  }
  return { ...answer, refusals: refusals.join('; ') };
}

async function waitReady(origin: string, ready: boolean): Promise<void> {
  for (const deadline = Date.now() + 20_000; (await fetch(`${origin}/readyz`)).ok !== ready; await sleep(100)) {
    if (Date.now() > deadline) throw new Error(`/readyz never became ${ready ? 'ready' : 'unready'}`);
  }
}

describe('HTTP ingest', () => {
  it('ingest → broker → worker → receiver, with the token; a delayed one too', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay();
    await relay.startWorker();
    const { origin, server } = await startIngestFor(relay);
    // INGEST_HOST's default: loopback only.
    expect(server.app.server.address()).toMatchObject({ address: '127.0.0.1' });
    const now = await post(origin, '/v1/callbacks', {
      url: `${receiver.origin}/now`,
      body: { order: 42 },
      headers: { 'x-tenant': 'acme' },
    });
    const later = await post(origin, '/v1/callbacks', { url: `${receiver.origin}/later`, body: null, delay: '1s' });
    expect([now.status, later.status]).toEqual([202, 202]);
    await receiver.waitFor((r) => r.length === 2, 15_000);
    const [first, second] = receiver.requests;
    expect([first!.path, first!.headers['webhook-id'], first!.headers['x-tenant'], JSON.parse(first!.body)]).toEqual([
      '/now',
      now.body.id,
      'acme',
      { order: 42 },
    ]);
    expect([second!.path, second!.headers['webhook-id']]).toEqual(['/later', later.body.id]);
  });

  it("INGEST_METRICS_PORT moves /metrics to a listener of its own on METRICS_HOST; the ingest's port no longer shows it", async () => {
    const relay = await open.relay();
    await relay.startWorker();
    const metricsPort = await freePort();
    const { origin } = await startIngestFor(relay, { INGEST_METRICS_PORT: String(metricsPort) });
    expect(ingest?.metricsPort).toBe(metricsPort);
    expect((await post(origin, '/v1/callbacks', { url: 'http://127.0.0.1:9/x', body: 1 })).status).toBe(202);
    expect((await fetch(`${origin}/metrics`)).status).toBe(404);
    expect((await fetch(`${origin}/readyz`)).status).toBe(200);
    const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain('callback_relay_ingest_accepted_total 1');
    expect((await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).status).toBe(200);
  });

  it('401 for a bad token and 400 naming the field for a malformed body; nothing is stored', async () => {
    const relay = await open.relay();
    const { origin } = await startIngestFor(relay);
    const unauthorized = await post(
      origin,
      '/v1/callbacks',
      { url: 'http://127.0.0.1:9/x', body: 1 },
      { authorization: 'Bearer not-the-token-at-all' },
    );
    expect([unauthorized.status, unauthorized.body.code]).toEqual([401, 'CR_ERR_UNAUTHORIZED']);
    const noUrl = await post(origin, '/v1/callbacks', { body: 1 });
    expect([noUrl.status, noUrl.body.field]).toEqual([400, 'url']);
    const badHeader = await post(origin, '/v1/callbacks', { url: 'http://127.0.0.1:9/x', body: 1, headers: { 'x-a': 'v\r\nInjected: 1' } });
    expect([badHeader.status, badHeader.body.field]).toEqual([400, 'headers.x-a']);
    expect(await queueDepth(relay.names.workQueue)).toBe(0);
  });

  it('a retried POST with the same Idempotency-Key keeps its id; the broker holds two copies, receivers deduplicate', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay();
    await relay.startWorker();
    const { origin } = await startIngestFor(relay);
    const payload = { url: `${receiver.origin}/once`, body: { paid: true } };
    const first = await post(origin, '/v1/callbacks', payload, { 'idempotency-key': 'order-42-paid' });
    const retry = await post(origin, '/v1/callbacks', payload, { 'idempotency-key': 'order-42-paid' });
    expect([first.status, first.body.id, retry.status, retry.body.id]).toEqual([202, 'acme:order-42-paid', 202, 'acme:order-42-paid']);
    await receiver.waitFor((r) => r.length === 2, 15_000);
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual(['acme:order-42-paid', 'acme:order-42-paid']);
  });

  it("a key is scoped to the token's name; the same key with another callback is refused (422) and never stored", async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay();
    await relay.startWorker();
    const { origin } = await startIngestFor(relay);
    const key = { 'idempotency-key': 'order-9' };
    const mine = await post(origin, '/v1/callbacks', { url: `${receiver.origin}/acme`, body: { amount: 10 } }, key);
    const theirs = await post(
      origin,
      '/v1/callbacks',
      { url: `${receiver.origin}/other`, body: { amount: 99 } },
      { ...key, authorization: `Bearer ${OTHER_TOKEN}` },
    );
    expect([mine.status, mine.body.id, theirs.status, theirs.body.id]).toEqual([202, 'acme:order-9', 202, 'other:order-9']);
    const changed = await post(origin, '/v1/callbacks', { url: `${receiver.origin}/acme`, body: { amount: 11 } }, key);
    expect([changed.status, changed.body.code, changed.body.field, changed.body.id]).toEqual([
      422,
      'CR_ERR_IDEMPOTENCY_KEY_REUSED',
      'Idempotency-Key',
      'acme:order-9',
    ]);
    await receiver.waitFor((r) => r.length === 2, 15_000);
    await sleep(500);
    expect(receiver.requests.map((r) => `${r.path} ${r.headers['webhook-id']} ${r.body}`).sort()).toEqual([
      '/acme acme:order-9 {"amount":10}',
      '/other other:order-9 {"amount":99}',
    ]);
  });

  it('a batch with one bad item is refused whole; the corrected batch is delivered', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay();
    const { origin } = await startIngestFor(relay);
    const items = [0, 1, 2].map((i) => ({ url: `${receiver.origin}/batch/${i}`, body: i }));
    const bad = await post(origin, '/v1/callbacks:batch', { callbacks: [items[0], { ...items[1], method: 'GET' }, items[2]] });
    expect([bad.status, bad.body.field]).toEqual([400, 'callbacks[1].method']);
    expect(await queueDepth(relay.names.workQueue)).toBe(0);
    const good = await post(origin, '/v1/callbacks:batch', { callbacks: items }, { 'idempotency-key': 'batch-7' });
    expect(good.status).toBe(202);
    const ids = items.map((item) => `acme:batch-7:${itemDigest(item)}`);
    expect(good.body.results).toEqual([0, 1, 2].map((index) => ({ index, id: ids[index], status: 202 })));
    // Resending one item alone with the same key gives it its own id again, not the first position's.
    const resent = await post(origin, '/v1/callbacks:batch', { callbacks: [items[2]] }, { 'idempotency-key': 'batch-7' });
    expect(resent.body.results).toEqual([{ index: 0, id: ids[2], status: 202 }]);
    await relay.startWorker();
    await receiver.waitFor((r) => r.length === 4, 15_000);
    expect(receiver.requests.map((r) => `${r.path} ${r.headers['webhook-id']}`).sort()).toEqual(
      [...items.map((item, i) => `${new URL(item.url).pathname} ${ids[i]}`), `/batch/2 ${ids[2]}`].sort(),
    );
  });

  it('503 while the broker is unreachable, nothing stored; the same POST succeeds once it is back', async () => {
    const relay = await open.relay();
    proxy = await startTcpProxy(inject('amqpUrl'));
    // An idle timeout shorter than the wait for the confirm: a request waiting for the broker is spared.
    const { origin } = await startIngestFor(relay, { AMQP_URL: proxy.url, PUBLISH_TIMEOUT: '2s', INGEST_CONNECTION_TIMEOUT: '1s' });
    await waitReady(origin, true);
    proxy.refuse(true);
    proxy.cut();
    const payload = { url: 'http://127.0.0.1:9/down', body: 1 };
    const down = await post(origin, '/v1/callbacks', payload, { 'idempotency-key': 'while-down' });
    expect(down.status).toBe(503);
    expect(['CR_ERR_PUBLISH_TIMEOUT', 'CR_ERR_OUTCOME_UNKNOWN']).toContain(down.body.code);
    expect([down.body.id, down.body.message]).toEqual([
      'acme:while-down',
      expect.stringContaining('send it again unchanged (delay aside) with the same Idempotency-Key'),
    ]);
    // Without a key the answer still names the id, and how to keep it.
    const unkeyed = await post(origin, '/v1/callbacks', payload);
    expect([unkeyed.status, unkeyed.body.message]).toEqual([503, expect.stringContaining(`send it again with "id": "${unkeyed.body.id}"`)]);
    expect((await fetch(`${origin}/readyz`)).status).toBe(503);
    // Past the publisher's own buffer timeout (PUBLISH_TIMEOUT + 1 s): nothing may reach the broker late.
    await sleep(2_000);
    proxy.refuse(false);
    await waitReady(origin, true);
    await sleep(1_000);
    expect(await queueDepth(relay.names.workQueue)).toBe(0);
    // Sent again as the 503 says. A loaded broker may confirm the first publish after a reconnect later
    // than this test's short PUBLISH_TIMEOUT: then the answer is 503 again and the client sends it again.
    const again = await postUntilAccepted(origin, payload, { 'idempotency-key': 'while-down' });
    expect([again.status, again.body.id], again.refusals).toEqual([202, 'acme:while-down']);
    const kept = await postUntilAccepted(origin, { ...payload, id: unkeyed.body.id });
    expect([kept.status, kept.body.id], kept.refusals).toEqual([202, unkeyed.body.id]);
    // A 503 after a timeout leaves the outcome unknown: a copy may be stored besides the accepted one.
    expect(await queueDepth(relay.names.workQueue)).toBeGreaterThanOrEqual(2);
  });
});

/** A request written by hand on a socket of its own: its head and the first `sent` bytes of its body. */
function startRawPost(
  origin: string,
  path: string,
  body: string,
  sent: number,
): { socket: Socket; answer: Promise<{ status: number; body: any; sentAll: boolean }>; finish(): void } {
  const { hostname, port } = new URL(origin);
  const socket = connect(Number(port), hostname);
  rawSockets.push(socket);
  const head = `POST ${path} HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer ${TOKEN}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`;
  socket.write(head + body.slice(0, sent));
  let written = sent;
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (received += chunk));
  const answer = new Promise<{ status: number; body: any; sentAll: boolean }>((resolve) => {
    const settle = (): void => {
      const match = /^HTTP\/1\.1 (\d{3})[^]*?\r\n\r\n([^]*)$/.exec(received);
      if (!match) return;
      const text = match[2]!;
      const length = Number(/content-length: (\d+)/i.exec(received)?.[1] ?? -1);
      if (Buffer.byteLength(text) < length) return;
      resolve({ status: Number(match[1]), body: text === '' ? undefined : JSON.parse(text), sentAll: written === body.length });
    };
    socket.on('data', settle);
    // A closed socket with no answer (reset before it could be read) counts as status 0.
    socket.on('close', () => resolve({ status: 0, body: received, sentAll: written === body.length }));
    socket.on('error', () => {});
  });
  return {
    socket,
    answer,
    finish() {
      socket.write(body.slice(written));
      written = body.length;
    },
  };
}

describe('HTTP ingest bounds', () => {
  it('a body trickled slower than INGEST_REQUEST_TIMEOUT allows is cut with 408, nothing stored; the replica goes on', async () => {
    const relay = await open.relay();
    const { origin } = await startIngestFor(relay, { INGEST_REQUEST_TIMEOUT: '1s' });
    const body = JSON.stringify({ url: 'http://127.0.0.1:9/slow', body: 'x'.repeat(2_000) });
    const slow = startRawPost(origin, '/v1/callbacks', body, 10);
    let trickled = 10;
    let closed = false;
    slow.socket.on('close', () => (closed = true));
    // One byte every 50 ms: the connection never goes idle, but the whole body would take 100 s.
    while (!closed && trickled < body.length - 1) {
      slow.socket.write(body[trickled++]!);
      await sleep(50);
    }
    const answer = await slow.answer;
    expect(trickled).toBeLessThan(body.length - 1);
    expect(answer.sentAll).toBe(false);
    // The 408 is written before the socket is closed; a reset of the unread bytes may still beat it.
    if (answer.status !== 0) expect([answer.status, answer.body.code]).toEqual([408, 'CR_ERR_REQUEST_TIMEOUT']);
    expect(await queueDepth(relay.names.workQueue)).toBe(0);
    const metrics = await (await fetch(`${origin}/metrics`)).text();
    expect(metrics).toContain('callback_relay_ingest_requests_total{route="unrouted",status="408"} 1');
    const fine = await post(origin, '/v1/callbacks', { url: 'http://127.0.0.1:9/fine', body: 1 });
    expect(fine.status).toBe(202);
  });

  it('a connection left silent past INGEST_CONNECTION_TIMEOUT is closed', async () => {
    const relay = await open.relay();
    const { origin } = await startIngestFor(relay, { INGEST_CONNECTION_TIMEOUT: '1s' });
    const silent = startRawPost(origin, '/v1/callbacks', JSON.stringify({ url: 'http://127.0.0.1:9/silent', body: 1 }), 5);
    const answer = await silent.answer;
    expect([answer.status, answer.sentAll]).toEqual([0, false]);
    expect(await queueDepth(relay.names.workQueue)).toBe(0);
  });

  it('a burst of large batches past INGEST_INFLIGHT_BYTES: those beyond get 503 unread, every accepted item is stored', async () => {
    const relay = await open.relay();
    const batchBytes = 262_144;
    const { origin } = await startIngestFor(relay, {
      MAX_PAYLOAD_BYTES: '65536',
      INGEST_BATCH_BYTES: String(batchBytes),
      INGEST_INFLIGHT_BYTES: String(3 * batchBytes),
    });
    // Six batches of four ~50 kB items (~200 kB each): three fit in the bound at once.
    const batches = [0, 1, 2, 3, 4, 5].map((b) =>
      JSON.stringify({ callbacks: [0, 1, 2, 3].map((i) => ({ url: `http://127.0.0.1:9/burst/${b}/${i}`, body: 'x'.repeat(50_000) })) }),
    );
    const requests = [];
    for (const body of batches) requests.push(startRawPost(origin, '/v1/callbacks:batch', body, 1_000));
    // The three admitted wait for the rest of their bodies; the other three are answered at once.
    const answered: { status: number; body: any }[] = [];
    const pending = new Set(requests);
    for (const request of requests) void request.answer.then((a) => (answered.push(a), pending.delete(request)));
    for (const deadline = Date.now() + 20_000; answered.length < 3; await sleep(50)) {
      if (Date.now() > deadline) throw new Error(`only ${answered.length} early answers`);
    }
    await sleep(200);
    expect(answered.map((a) => [a.status, a.body.code])).toEqual([0, 1, 2].map(() => [503, 'CR_ERR_INGEST_BUSY']));
    expect(pending.size).toBe(3);
    for (const request of pending) request.finish();
    const admitted = await Promise.all([...pending].map((request) => request.answer));
    expect(admitted.map((a) => a.status)).toEqual([202, 202, 202]);
    const ids = admitted.flatMap((a) => a.body.results.map((r: { id: string; status: number }) => (expect(r.status).toBe(202), r.id)));
    expect(new Set(ids).size).toBe(12);
    expect(await queueDepth(relay.names.workQueue)).toBe(12);
    // Over INGEST_BATCH_BYTES: 413 from the Content-Length alone.
    const tooBig = await post(origin, '/v1/callbacks:batch', {
      callbacks: [0, 1, 2, 3, 4, 5].map((i) => ({ url: `http://127.0.0.1:9/big/${i}`, body: 'x'.repeat(50_000) })),
    });
    expect([tooBig.status, tooBig.body.message]).toEqual([413, expect.stringContaining('INGEST_BATCH_BYTES')]);
    const metrics = await (await fetch(`${origin}/metrics`)).text();
    expect(metrics).toContain('callback_relay_ingest_inflight_bytes 0');
  });
});
