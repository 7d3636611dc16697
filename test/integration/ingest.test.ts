import { afterEach, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { startIngest, type RunningIngest } from '../../src/ingest/start-ingest.js';
import { sleep } from '../support/modes.js';
import { queueDepth } from '../support/queue-depth.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { testConfig, type RelayFixture } from '../support/relay.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

const TOKEN = 'integration-token-0123456789';
const open = openedInEachTest();
let ingest: RunningIngest | undefined;
let proxy: TcpProxy | undefined;
afterEach(async () => {
  await ingest?.close();
  await proxy?.close();
  ingest = undefined;
  proxy = undefined;
});

/** An ingest on port 0 for `relay`'s topology; `env` overrides its settings (e.g. AMQP_URL). */
async function startIngestFor(relay: RelayFixture, env: Record<string, string> = {}): Promise<RunningIngest> {
  const config = testConfig({ TOPOLOGY_PREFIX: relay.config.topologyPrefix, INGEST_TOKENS: `old-token-0123456789,${TOKEN}`, ...env });
  ingest = await startIngest(config, createLogger(config.logLevel), 0);
  return ingest;
}

async function post(origin: string, path: string, payload: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers },
    body: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
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
    const { origin } = await startIngestFor(relay);
    const now = await post(origin, '/v1/callbacks', { url: `${receiver.origin}/now`, body: { order: 42 }, headers: { 'x-tenant': 'acme' } });
    const later = await post(origin, '/v1/callbacks', { url: `${receiver.origin}/later`, body: null, delay: '1s' });
    expect([now.status, later.status]).toEqual([202, 202]);
    await receiver.waitFor((r) => r.length === 2, 15_000);
    const [first, second] = receiver.requests;
    expect([first!.path, first!.headers['webhook-id'], first!.headers['x-tenant'], JSON.parse(first!.body)]).toEqual(['/now', now.body.id, 'acme', { order: 42 }]);
    expect([second!.path, second!.headers['webhook-id']]).toEqual(['/later', later.body.id]);
  });

  it('401 for a bad token and 400 naming the field for a malformed body; nothing is stored', async () => {
    const relay = await open.relay();
    const { origin } = await startIngestFor(relay);
    const unauthorized = await post(origin, '/v1/callbacks', { url: 'http://127.0.0.1:9/x', body: 1 }, { authorization: 'Bearer not-the-token-at-all' });
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
    expect([first.status, first.body.id, retry.status, retry.body.id]).toEqual([202, 'order-42-paid', 202, 'order-42-paid']);
    await receiver.waitFor((r) => r.length === 2, 15_000);
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual(['order-42-paid', 'order-42-paid']);
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
    expect(good.body.results).toEqual([0, 1, 2].map((index) => ({ index, id: `batch-7:${index}`, status: 202 })));
    await relay.startWorker();
    await receiver.waitFor((r) => r.length === 3, 15_000);
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id']))).toEqual(new Set(['batch-7:0', 'batch-7:1', 'batch-7:2']));
  });

  it('503 while the broker is unreachable, nothing stored; the same POST succeeds once it is back', async () => {
    const relay = await open.relay();
    proxy = await startTcpProxy(inject('amqpUrl'));
    const { origin } = await startIngestFor(relay, { AMQP_URL: proxy.url, PUBLISH_TIMEOUT: '2s' });
    await waitReady(origin, true);
    proxy.refuse(true);
    proxy.cut();
    const payload = { url: 'http://127.0.0.1:9/down', body: 1 };
    const down = await post(origin, '/v1/callbacks', payload, { 'idempotency-key': 'while-down' });
    expect(down.status).toBe(503);
    expect(['CR_ERR_PUBLISH_TIMEOUT', 'CR_ERR_OUTCOME_UNKNOWN']).toContain(down.body.code);
    expect(down.body.message).toContain('retry with the same Idempotency-Key');
    expect((await fetch(`${origin}/readyz`)).status).toBe(503);
    // Past the publisher's own buffer timeout (PUBLISH_TIMEOUT + 1 s): nothing may reach the broker late.
    await sleep(2_000);
    proxy.refuse(false);
    await waitReady(origin, true);
    await sleep(1_000);
    expect(await queueDepth(relay.names.workQueue)).toBe(0);
    const again = await post(origin, '/v1/callbacks', payload, { 'idempotency-key': 'while-down' });
    expect([again.status, again.body.id]).toEqual([202, 'while-down']);
    expect(await queueDepth(relay.names.workQueue)).toBe(1);
  });
});
