import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { configSchema } from '../../../src/config/schema.js';
import { RelayError, type RelayErrorCode } from '../../../src/errors.js';
import { buildIngestServer, type IngestServer } from '../../../src/ingest/ingest-server.js';
import type { Callback } from '../../../src/message/callback.js';
import { encodeCallback } from '../../../src/producer/encode-callback.js';
import { firstAttemptDelay, type PublishOptions } from '../../../src/producer/publisher.js';

const TOKEN = 'unit-test-token-0123456789';
const auth = { authorization: `Bearer ${TOKEN}` };
const URL_ = 'https://example.com/hook';

/** Stands in for the library publisher: checks as publish() does, records publishes, fails those whose url says so. */
function publisherStub() {
  const published: { callback: Callback; options: PublishOptions | undefined }[] = [];
  let connected = true;
  return {
    published,
    setConnected: (value: boolean) => void (connected = value),
    publisher: {
      connected: () => connected,
      async publish(callback: Callback, options?: PublishOptions) {
        encodeCallback(callback, 2_000);
        firstAttemptDelay(options ?? {}, Date.now());
        const failure = /fail=(\w+)/.exec(callback.url)?.[1];
        if (failure) throw new RelayError(failure as RelayErrorCode, 'stub failure');
        published.push({ callback, options });
        return { id: callback.id! };
      },
    },
  };
}

let server: IngestServer | undefined;
afterEach(async () => server?.app.close());

function start(batchMax = 3, maxPayloadBytes = 2_000) {
  const stub = publisherStub();
  let n = 0;
  server = buildIngestServer({ tokens: ['other-token-0123456789', TOKEN], batchMax, maxPayloadBytes }, { publisher: stub.publisher, newId: () => `new-${++n}` });
  return { ...stub, inject: server.app.inject.bind(server.app) };
}

describe('POST /v1/callbacks', () => {
  it('answers 202 with the id once published, delay and all', async () => {
    const { inject, published } = start();
    const res = await inject({ method: 'POST', url: '/v1/callbacks', headers: auth, payload: { url: URL_, body: { a: 1 }, delay: '30s' } });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ id: 'new-1' });
    expect(published).toEqual([{ callback: { url: URL_, body: { a: 1 }, id: 'new-1' }, options: { delay: 30_000 } }]);
  });

  it('takes the id from Idempotency-Key when the body has none, so a retry keeps it', async () => {
    const { inject, published } = start();
    for (let i = 0; i < 2; i++) {
      const res = await inject({ method: 'POST', url: '/v1/callbacks', headers: { ...auth, 'idempotency-key': 'order-42' }, payload: { url: URL_, body: null } });
      expect(res.json()).toEqual({ id: 'order-42' });
    }
    expect(published.map((p) => p.callback.id)).toEqual(['order-42', 'order-42']);
  });

  it('401 without a valid token, before reading the body', async () => {
    const { inject, published } = start();
    for (const headers of [{}, { authorization: 'Bearer nope-nope-nope-nope' }, { authorization: TOKEN }]) {
      const res = await inject({ method: 'POST', url: '/v1/callbacks', headers: { ...headers, 'content-type': 'text/plain' }, payload: 'x'.repeat(10_000) });
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(res.json()).toMatchObject({ code: 'CR_ERR_UNAUTHORIZED', retry: false });
    }
    expect(published).toEqual([]);
  });

  it('400 names the field, from the schema and from the library validation alike', async () => {
    const { inject, published } = start();
    const cases: [unknown, string][] = [
      [{ body: 1 }, 'url'],
      [{ url: URL_ }, 'body'],
      [{ url: URL_, body: 1, extra: true }, 'extra'],
      [{ url: 42, body: 1 }, 'url'],
      [{ url: 'ftp://x/', body: 1 }, 'url'],
      [{ url: URL_, body: 1, headers: { 'x-a': 1 } }, 'headers.x-a'],
      [{ url: URL_, body: 1, headers: { 'webhook-id': 'x' } }, 'headers.webhook-id'],
      [{ url: URL_, body: 1, method: 'GET' }, 'method'],
      [{ url: URL_, body: 1, delay: -1 }, 'delay'],
      [{ url: URL_, body: 1, deliverAt: 'tomorrow' }, 'deliverAt'],
      [[], 'request'],
    ];
    for (const [payload, field] of cases) {
      const res = await inject({ method: 'POST', url: '/v1/callbacks', headers: auth, payload: payload as object });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json(), JSON.stringify(payload)).toMatchObject({ code: 'CR_ERR_INVALID_CALLBACK', field, retry: false });
    }
    const key = await inject({ method: 'POST', url: '/v1/callbacks', headers: { ...auth, 'idempotency-key': ' x' }, payload: { url: URL_, body: 1 } });
    expect(key.json()).toMatchObject({ field: 'Idempotency-Key' });
    const notJson = await inject({ method: 'POST', url: '/v1/callbacks', headers: { ...auth, 'content-type': 'application/json' }, payload: '{"url":' });
    expect([notJson.statusCode, notJson.json().field]).toEqual([400, 'request']);
    expect(published).toEqual([]);
  });

  it('415 for a non-JSON content type, 413 over MAX_PAYLOAD_BYTES', async () => {
    const { inject } = start();
    const text = await inject({ method: 'POST', url: '/v1/callbacks', headers: { ...auth, 'content-type': 'text/plain' }, payload: '{}' });
    expect([text.statusCode, text.json().field]).toEqual([415, 'content-type']);
    const big = await inject({ method: 'POST', url: '/v1/callbacks', headers: auth, payload: { url: URL_, body: 'x'.repeat(3_000) } });
    expect([big.statusCode, big.json().code, big.json().field]).toEqual([413, 'CR_ERR_INVALID_CALLBACK', 'request']);
  });

  it('429 when the publish buffer is full; 503 with "retry with the same Idempotency-Key" when the outcome is unknown', async () => {
    const { inject } = start();
    const full = await inject({ method: 'POST', url: '/v1/callbacks', headers: auth, payload: { url: `${URL_}?fail=CR_ERR_BUFFER_FULL`, body: 1 } });
    expect([full.statusCode, full.json().code, full.headers['retry-after']]).toEqual([429, 'CR_ERR_BUFFER_FULL', '1']);
    for (const code of ['CR_ERR_PUBLISH_TIMEOUT', 'CR_ERR_OUTCOME_UNKNOWN', 'CR_ERR_PUBLISH_NACKED', 'CR_ERR_PUBLISH_RETURNED', 'CR_ERR_CLOSED']) {
      const res = await inject({ method: 'POST', url: '/v1/callbacks', headers: auth, payload: { url: `${URL_}?fail=${code}`, body: 1 } });
      expect(res.statusCode, code).toBe(503);
      expect(res.json(), code).toMatchObject({ code, retry: true });
      expect(res.json().message).toContain('retry with the same Idempotency-Key');
    }
    const bug = await inject({ method: 'POST', url: '/v1/callbacks', headers: auth, payload: { url: `${URL_}?fail=CR_ERR_TOPOLOGY`, body: 1 } });
    expect(bug.statusCode).toBe(500);
  });
});

describe('POST /v1/callbacks:batch', () => {
  it('202 with one result per item; ids from Idempotency-Key:<index> when the item has none', async () => {
    const { inject, published } = start();
    const res = await inject({ method: 'POST', url: '/v1/callbacks:batch', headers: { ...auth, 'idempotency-key': 'b1' }, payload: { callbacks: [{ url: URL_, body: 1 }, { id: 'own', url: URL_, body: 2 }] } });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ results: [{ index: 0, id: 'b1:0', status: 202 }, { index: 1, id: 'own', status: 202 }] });
    expect(published).toHaveLength(2);
  });

  it('one invalid item refuses the whole batch, naming it, and publishes nothing', async () => {
    const { inject, published } = start();
    for (const bad of [{ url: URL_ }, { url: 'mailto:x@example.com', body: 1 }]) {
      const res = await inject({ method: 'POST', url: '/v1/callbacks:batch', headers: auth, payload: { callbacks: [{ url: URL_, body: 1 }, bad] } });
      expect(res.statusCode).toBe(400);
      expect(res.json().field).toMatch(/^callbacks\[1\]\.(body|url)$/);
    }
    const tooMany = await inject({ method: 'POST', url: '/v1/callbacks:batch', headers: auth, payload: { callbacks: Array(4).fill({ url: URL_, body: 1 }) } });
    expect([tooMany.statusCode, tooMany.json().field]).toEqual([400, 'callbacks']);
    expect(published).toEqual([]);
  });

  it('publish failures are per item; the status is the worst one', async () => {
    const { inject, published } = start();
    const payload = { callbacks: [{ url: URL_, body: 1 }, { url: `${URL_}?fail=CR_ERR_BUFFER_FULL`, body: 2 }, { url: `${URL_}?fail=CR_ERR_PUBLISH_TIMEOUT`, body: 3 }] };
    const res = await inject({ method: 'POST', url: '/v1/callbacks:batch', headers: auth, payload });
    expect(res.statusCode).toBe(503);
    expect(res.json().results.map((r: { status: number; code?: string }) => [r.status, r.code])).toEqual([[202, undefined], [429, 'CR_ERR_BUFFER_FULL'], [503, 'CR_ERR_PUBLISH_TIMEOUT']]);
    expect(published).toHaveLength(1);
  });
});

describe('probes, metrics, OpenAPI', () => {
  it('/readyz follows the publisher connection and drain()', async () => {
    const { inject, setConnected } = start();
    expect((await inject('/healthz')).statusCode).toBe(200);
    expect((await inject('/readyz')).statusCode).toBe(200);
    setConnected(false);
    expect((await inject('/readyz')).statusCode).toBe(503);
    setConnected(true);
    server!.drain();
    expect((await inject('/readyz')).statusCode).toBe(503);
  });

  it('/metrics counts requests by route and status, and accepted callbacks', async () => {
    const { inject } = start();
    await inject({ method: 'POST', url: '/v1/callbacks', headers: auth, payload: { url: URL_, body: 1 } });
    await inject({ method: 'POST', url: '/v1/callbacks:batch', headers: {}, payload: {} });
    await inject('/v1/nothing-here');
    const text = (await inject('/metrics')).body;
    expect(text).toContain('callback_relay_ingest_requests_total{route="/v1/callbacks",status="202"} 1');
    expect(text).toContain('callback_relay_ingest_requests_total{route="/v1/callbacks:batch",status="401"} 1');
    expect(text).toContain('callback_relay_ingest_requests_total{route="unmatched",status="404"} 1');
    expect(text).toContain('callback_relay_ingest_request_duration_seconds_count{route="/v1/callbacks"} 1');
    expect(text).toContain('callback_relay_ingest_accepted_total 1');
  });

  it('/openapi.json is docs/openapi.json (regenerate: npm run docs:openapi -- --write)', async () => {
    const { inject } = start(configSchema.ingestBatchMax.default);
    const served = (await inject({ method: 'POST', url: '/v1/callbacks', headers: auth, payload: { url: URL_, body: 1 } }), await inject('/openapi.json')).json();
    const file = JSON.parse(readFileSync(new URL('../../../docs/openapi.json', import.meta.url), 'utf8'));
    expect(served).toEqual(file);
    expect(served.paths['/v1/callbacks'].post.requestBody.content['application/json'].schema).toEqual(served.components.schemas.Envelope);
  });
});
