import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { configSchema } from '../../../src/config/schema.js';
import { RelayError, type RelayErrorCode } from '../../../src/errors.js';
import { itemDigest } from '../../../src/ingest/callback-ids.js';
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
  const held: (() => void)[] = [];
  return {
    published,
    setConnected: (value: boolean) => void (connected = value),
    /** Lets every publish whose url has `hold` go on (they wait for the broker until then). */
    release: () => held.splice(0).forEach((go) => go()),
    held: () => held.length,
    publisher: {
      connected: () => connected,
      async publish(callback: Callback, options?: PublishOptions) {
        encodeCallback(callback, 2_000);
        firstAttemptDelay(options ?? {}, Date.now());
        const failure = /fail=(\w+)/.exec(callback.url)?.[1];
        if (failure === 'TypeError') throw new TypeError('a bug');
        if (failure) throw new RelayError(failure as RelayErrorCode, 'stub failure');
        if (callback.url.includes('hold')) await new Promise<void>((go) => held.push(go));
        published.push({ callback, options });
        return { id: callback.id! };
      },
    },
  };
}

const OTHER_TOKEN = 'other-token-0123456789';
let clock = 0;
let server: IngestServer | undefined;
afterEach(async () => server?.app.close());

function start(batchMax = 3, maxPayloadBytes = 2_000, inflightBytes = 100_000) {
  const stub = publisherStub();
  let n = 0;
  const tokens = [
    { name: 'other', token: OTHER_TOKEN },
    { name: 'acme', token: TOKEN },
  ];
  const options = {
    tokens,
    batchMax,
    maxPayloadBytes,
    batchBytes: 5_000,
    inflightBytes,
    requestTimeout: 30_000,
    connectionTimeout: 60_000,
    idempotencyWindow: 60_000,
    idempotencyKeys: 100,
  };
  server = buildIngestServer(options, { publisher: stub.publisher, newId: () => `new-${++n}`, now: () => clock });
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

  it("takes the id from the token's name and the Idempotency-Key when the body has none, so a retry keeps it", async () => {
    const { inject, published } = start();
    for (let i = 0; i < 2; i++) {
      const res = await inject({
        method: 'POST',
        url: '/v1/callbacks',
        headers: { ...auth, 'idempotency-key': 'order-42' },
        payload: { url: URL_, body: null, delay: i * 10 },
      });
      expect(res.json()).toEqual({ id: 'acme:order-42' });
    }
    expect(published.map((p) => p.callback.id)).toEqual(['acme:order-42', 'acme:order-42']);
  });

  it("scopes the key to the token's name: two clients with the same key get two ids", async () => {
    const { inject, published } = start();
    const other = await inject({
      method: 'POST',
      url: '/v1/callbacks',
      headers: { authorization: `Bearer ${OTHER_TOKEN}`, 'idempotency-key': 'order-42' },
      payload: { url: URL_, body: 'theirs' },
    });
    const mine = await inject({
      method: 'POST',
      url: '/v1/callbacks',
      headers: { ...auth, 'idempotency-key': 'order-42' },
      payload: { url: URL_, body: 'mine' },
    });
    expect([other.statusCode, other.json().id, mine.statusCode, mine.json().id]).toEqual([202, 'other:order-42', 202, 'acme:order-42']);
    expect(published.map((p) => p.callback.body)).toEqual(['theirs', 'mine']);
  });

  it('422 CR_ERR_IDEMPOTENCY_KEY_REUSED for the same key with another callback within the window, never published', async () => {
    clock = 0;
    const { inject, published } = start();
    const post = (payload: object, key = 'order-7') =>
      inject({ method: 'POST', url: '/v1/callbacks', headers: { ...auth, 'idempotency-key': key }, payload });
    expect((await post({ url: URL_, body: { a: 1, b: 2 } })).statusCode).toBe(202);
    for (const other of [
      { url: URL_, body: { a: 1, b: 3 } },
      { url: `${URL_}/2`, body: { a: 1, b: 2 } },
      { url: URL_, body: { a: 1, b: 2 }, headers: { 'x-a': '1' } },
      { url: URL_, body: { a: 1, b: 2 }, method: 'PUT' },
    ]) {
      const res = await post(other);
      expect(res.statusCode, JSON.stringify(other)).toBe(422);
      expect(res.json()).toMatchObject({
        code: 'CR_ERR_IDEMPOTENCY_KEY_REUSED',
        field: 'Idempotency-Key',
        id: 'acme:order-7',
        retry: false,
      });
    }
    // The same callback spelt otherwise, or with another delay, is the same callback: a retry.
    expect((await post({ body: { b: 2, a: 1 }, url: URL_, delay: '5s' })).statusCode).toBe(202);
    expect(published.map((p) => p.callback.body)).toEqual([
      { a: 1, b: 2 },
      { b: 2, a: 1 },
    ]);
    // An explicit id is the client's own: the key is not used, so nothing is checked.
    expect((await post({ id: 'own', url: URL_, body: 'else' })).statusCode).toBe(202);
    clock = 60_000;
    expect((await post({ url: URL_, body: 'after the window' })).statusCode).toBe(202);
  });

  it('a callback refused as invalid (400) does not take its key: the corrected one goes through', async () => {
    const { inject, published } = start();
    const post = (payload: object) =>
      inject({ method: 'POST', url: '/v1/callbacks', headers: { ...auth, 'idempotency-key': 'fix-me' }, payload });
    const bad = await post({ url: 'ftp://example.com/x', body: 1 });
    expect([bad.statusCode, bad.json().field]).toEqual([400, 'url']);
    expect((await post({ url: URL_, body: 1 })).statusCode).toBe(202);
    expect(published).toHaveLength(1);
  });

  it('401 without a valid token, before reading the body', async () => {
    const { inject, published } = start();
    for (const headers of [{}, { authorization: 'Bearer nope-nope-nope-nope' }, { authorization: TOKEN }]) {
      const res = await inject({
        method: 'POST',
        url: '/v1/callbacks',
        headers: { ...headers, 'content-type': 'text/plain' },
        payload: 'x'.repeat(10_000),
      });
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
    const key = await inject({
      method: 'POST',
      url: '/v1/callbacks',
      headers: { ...auth, 'idempotency-key': ' x' },
      payload: { url: URL_, body: 1 },
    });
    expect(key.json()).toMatchObject({ field: 'Idempotency-Key' });
    const notJson = await inject({
      method: 'POST',
      url: '/v1/callbacks',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: '{"url":',
    });
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

  it('429 when the publish buffer is full; 503 when the outcome is unknown; each answer carries the id and how to keep it', async () => {
    const { inject } = start();
    const full = await inject({
      method: 'POST',
      url: '/v1/callbacks',
      headers: auth,
      payload: { url: `${URL_}?fail=CR_ERR_BUFFER_FULL`, body: 1 },
    });
    expect([full.statusCode, full.json().code, full.json().id, full.headers['retry-after']]).toEqual([
      429,
      'CR_ERR_BUFFER_FULL',
      'new-1',
      '1',
    ]);
    for (const code of [
      'CR_ERR_PUBLISH_TIMEOUT',
      'CR_ERR_OUTCOME_UNKNOWN',
      'CR_ERR_PUBLISH_NACKED',
      'CR_ERR_PUBLISH_RETURNED',
      'CR_ERR_CLOSED',
    ]) {
      const res = await inject({
        method: 'POST',
        url: '/v1/callbacks',
        headers: { ...auth, 'idempotency-key': `k-${code}` },
        payload: { url: `${URL_}?fail=${code}`, body: 1 },
      });
      expect(res.statusCode, code).toBe(503);
      expect(res.json(), code).toMatchObject({ code, id: `acme:k-${code}`, retry: true });
      expect(res.json().message).toContain(
        `with the same Idempotency-Key and a token of the same name, so that it keeps the id "acme:k-${code}"`,
      );
    }
    const bug = await inject({
      method: 'POST',
      url: '/v1/callbacks',
      headers: auth,
      payload: { url: `${URL_}?fail=CR_ERR_TOPOLOGY`, body: 1 },
    });
    expect([bug.statusCode, bug.json().id]).toEqual([500, 'new-2']);
  });

  it('without a key or id the "maybe stored" 503 returns the new id and says to send it again with that id', async () => {
    const { inject } = start();
    for (const fail of ['CR_ERR_PUBLISH_TIMEOUT', 'TypeError']) {
      const res = await inject({ method: 'POST', url: '/v1/callbacks', headers: auth, payload: { url: `${URL_}?fail=${fail}`, body: 1 } });
      expect(res.json().message, fail).toContain('may or may not be stored');
      expect(res.json().message, fail).toContain('send it again with "id": "' + res.json().id + '" in the callback');
      expect(res.json().message, fail).toContain('the relay does not deduplicate');
    }
    const own = await inject({
      method: 'POST',
      url: '/v1/callbacks',
      headers: { ...auth, 'idempotency-key': 'ignored' },
      payload: { id: 'mine', url: `${URL_}?fail=CR_ERR_OUTCOME_UNKNOWN`, body: 1 },
    });
    expect([own.json().id, own.json().message]).toEqual(['mine', expect.stringContaining('send it again with the same id "mine"')]);
  });

  it('503 CR_ERR_INGEST_BUSY, unread, when INGEST_INFLIGHT_BYTES are held; the bytes come back with the answer', async () => {
    const { inject, release, held, published } = start(3, 2_000, 3_000);
    const payload = { url: `${URL_}/hold`, body: 'x'.repeat(1_400) };
    const first = inject({ method: 'POST', url: '/v1/callbacks', headers: auth, payload });
    const second = inject({ method: 'POST', url: '/v1/callbacks', headers: auth, payload });
    await vi.waitFor(() => expect(held()).toBe(2));
    const busy = await inject({ method: 'POST', url: '/v1/callbacks', headers: auth, payload });
    expect([busy.statusCode, busy.json().code, busy.json().retry, busy.headers['retry-after']]).toEqual([
      503,
      'CR_ERR_INGEST_BUSY',
      true,
      '1',
    ]);
    expect((await inject('/metrics')).body).toMatch(/callback_relay_ingest_inflight_bytes \d{4}/);
    release();
    expect([(await first).statusCode, (await second).statusCode]).toEqual([202, 202]);
    const again = inject({ method: 'POST', url: '/v1/callbacks', headers: auth, payload });
    await vi.waitFor(() => expect(held()).toBe(1));
    release();
    expect((await again).statusCode).toBe(202);
    expect(published).toHaveLength(3);
    expect((await inject('/metrics')).body).toContain('callback_relay_ingest_inflight_bytes 0');
  });
});

describe('POST /v1/callbacks:batch', () => {
  it('202 with one result per item; ids from <token name>:<Idempotency-Key>:<digest of the item> when the item has none', async () => {
    const { inject, published } = start();
    const res = await inject({
      method: 'POST',
      url: '/v1/callbacks:batch',
      headers: { ...auth, 'idempotency-key': 'b1' },
      payload: {
        callbacks: [
          { url: URL_, body: 1 },
          { id: 'own', url: URL_, body: 2 },
        ],
      },
    });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({
      results: [
        { index: 0, id: `acme:b1:${itemDigest({ url: URL_, body: 1 })}`, status: 202 },
        { index: 1, id: 'own', status: 202 },
      ],
    });
    expect(published).toHaveLength(2);
  });

  it("resending the failed items with the same key gives each its own id again, never another item's", async () => {
    const { inject } = start();
    const items = [
      { url: URL_, body: 'a' },
      { url: `${URL_}?fail=CR_ERR_PUBLISH_TIMEOUT`, body: 'b' },
      { url: URL_, body: 'c' },
    ];
    const first = await inject({
      method: 'POST',
      url: '/v1/callbacks:batch',
      headers: { ...auth, 'idempotency-key': 'k' },
      payload: { callbacks: items },
    });
    const failed = first.json().results[1];
    expect([first.statusCode, failed.status, failed.message]).toEqual([
      503,
      503,
      expect.stringContaining(`with the same Idempotency-Key and a token of the same name, or with "id": "${failed.id}"`),
    ]);
    const resent = await inject({
      method: 'POST',
      url: '/v1/callbacks:batch',
      headers: { ...auth, 'idempotency-key': 'k' },
      payload: { callbacks: [items[1]] },
    });
    expect(resent.json().results[0].id).toBe(failed.id);
    expect(new Set(first.json().results.map((r: { id: string }) => r.id)).size).toBe(3);
  });

  it('without a key, items get new ids that every answer returns', async () => {
    const { inject } = start();
    const res = await inject({
      method: 'POST',
      url: '/v1/callbacks:batch',
      headers: auth,
      payload: {
        callbacks: [
          { url: URL_, body: 1 },
          { url: `${URL_}?fail=CR_ERR_OUTCOME_UNKNOWN`, body: 1 },
        ],
      },
    });
    expect(res.json().results.map((r: { id: string }) => r.id)).toEqual(['new-1', 'new-2']);
    expect(res.json().results[1].message).toContain('send it again with "id": "new-2" in the callback');
  });

  it('identical items without ids refuse the batch, naming the second; 413 over INGEST_BATCH_BYTES', async () => {
    const { inject, published } = start();
    const same = { url: URL_, body: { a: 1, b: 2 } };
    const res = await inject({
      method: 'POST',
      url: '/v1/callbacks:batch',
      headers: { ...auth, 'idempotency-key': 'k' },
      payload: { callbacks: [same, { url: URL_, body: { b: 2, a: 1 }, delay: 5 }] },
    });
    expect([res.statusCode, res.json().field]).toEqual([400, 'callbacks[1]']);
    const big = await inject({
      method: 'POST',
      url: '/v1/callbacks:batch',
      headers: auth,
      payload: { callbacks: [0, 1, 2].map(() => ({ url: URL_, body: 'x'.repeat(1_800) })) },
    });
    expect([big.statusCode, big.json().message]).toEqual([413, expect.stringContaining('INGEST_BATCH_BYTES')]);
    expect(published).toEqual([]);
  });

  it('one invalid item refuses the whole batch, naming it, and publishes nothing', async () => {
    const { inject, published } = start();
    for (const bad of [{ url: URL_ }, { url: 'mailto:x@example.com', body: 1 }]) {
      const res = await inject({
        method: 'POST',
        url: '/v1/callbacks:batch',
        headers: auth,
        payload: { callbacks: [{ url: URL_, body: 1 }, bad] },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().field).toMatch(/^callbacks\[1\]\.(body|url)$/);
    }
    const tooMany = await inject({
      method: 'POST',
      url: '/v1/callbacks:batch',
      headers: auth,
      payload: { callbacks: Array(4).fill({ url: URL_, body: 1 }) },
    });
    expect([tooMany.statusCode, tooMany.json().field]).toEqual([400, 'callbacks']);
    expect(published).toEqual([]);
  });

  it('publish failures are per item; the status is the worst one', async () => {
    const { inject, published } = start();
    const payload = {
      callbacks: [
        { url: URL_, body: 1 },
        { url: `${URL_}?fail=CR_ERR_BUFFER_FULL`, body: 2 },
        { url: `${URL_}?fail=CR_ERR_PUBLISH_TIMEOUT`, body: 3 },
      ],
    };
    const res = await inject({ method: 'POST', url: '/v1/callbacks:batch', headers: auth, payload });
    expect(res.statusCode).toBe(503);
    expect(res.json().results.map((r: { status: number; code?: string }) => [r.status, r.code])).toEqual([
      [202, undefined],
      [429, 'CR_ERR_BUFFER_FULL'],
      [503, 'CR_ERR_PUBLISH_TIMEOUT'],
    ]);
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
    const picked = (await inject('/metrics?name=callback_relay_ingest_accepted_total')).body;
    expect(picked).toBe(text.split('\n\n').find((block) => block.includes('# TYPE callback_relay_ingest_accepted_total'))! + '\n');
  });

  it('/openapi.json is docs/openapi.json (regenerate: npm run docs:openapi -- --write)', async () => {
    const { inject } = start(configSchema.ingestBatchMax.default);
    const served = (await inject({ method: 'POST', url: '/v1/callbacks', headers: auth, payload: { url: URL_, body: 1 } }),
    await inject('/openapi.json')).json();
    const file = JSON.parse(readFileSync(new URL('../../../docs/openapi.json', import.meta.url), 'utf8'));
    expect(served).toEqual(file);
    expect(served.paths['/v1/callbacks'].post.requestBody.content['application/json'].schema).toEqual(served.components.schemas.Envelope);
  });
});
