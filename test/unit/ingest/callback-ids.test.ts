import { describe, expect, it } from 'vitest';
import { isRelayError } from '../../../src/errors.js';
import { batchIds, itemDigest, maxKeyLength, resendAdvice, singleId } from '../../../src/ingest/callback-ids.js';
import type { Envelope } from '../../../src/ingest/envelope.js';
import { isValidId } from '../../../src/message/callback.js';

const URL_ = 'https://example.com/hook';
const counter = () => {
  let n = 0;
  return () => `new-${++n}`;
};

function refusal(run: () => unknown): { field: string | undefined; message: string } {
  try {
    run();
  } catch (error) {
    if (isRelayError(error, 'CR_ERR_INVALID_CALLBACK')) return { field: error.field, message: error.message };
    throw error;
  }
  throw new Error('accepted');
}

describe('singleId', () => {
  it('takes the body id, else <token name>:<Idempotency-Key>, else a new one, and says which', () => {
    expect(singleId({ id: 'own', url: URL_, body: 1 }, 'key', 'acme', counter())).toEqual({ id: 'own', from: 'body' });
    expect(singleId({ url: URL_, body: 1 }, 'key', 'acme', counter())).toEqual({ id: 'acme:key', from: 'key' });
    expect(singleId({ url: URL_, body: 1 }, 'key', 'other', counter())).toEqual({ id: 'other:key', from: 'key' });
    expect(singleId({ url: URL_, body: 1 }, undefined, 'acme', counter())).toEqual({ id: 'new-1', from: 'new' });
  });

  it("refuses a key too long for <token name>:<key>, by the name's length", () => {
    const most = maxKeyLength('acme', false);
    expect(most).toBe(250);
    expect(isValidId(singleId({ url: URL_, body: 1 }, 'k'.repeat(most), 'acme', counter()).id)).toBe(true);
    const refused = refusal(() => singleId({ url: URL_, body: 1 }, 'k'.repeat(most + 1), 'acme', counter()));
    expect([refused.field, refused.message]).toEqual([
      'Idempotency-Key',
      expect.stringContaining('at most 250 characters with the token named "acme"'),
    ]);
  });
});

describe('itemDigest', () => {
  it('is the same for the same item however it is spelt, delay aside', () => {
    const item: Envelope = { url: URL_, body: { a: 1, b: [1, { c: 2, d: 3 }] }, headers: { 'X-Tenant': 'acme', 'x-b': '2' } };
    const respelt: Envelope = {
      headers: { 'x-b': '2', 'x-tenant': 'acme' },
      body: { b: [1, { d: 3, c: 2 }], a: 1 },
      url: URL_,
      method: 'POST',
      delay: '30s',
    };
    expect(itemDigest(respelt)).toBe(itemDigest(item));
    expect(itemDigest(item)).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it('differs for anything the receiver sees', () => {
    const base: Envelope = { url: URL_, body: { a: 1 } };
    const variants: Envelope[] = [
      { ...base, url: `${URL_}/2` },
      { ...base, body: { a: 2 } },
      { ...base, body: [{ a: 1 }] },
      { ...base, method: 'PUT' },
      { ...base, headers: { 'x-a': '1' } },
      { ...base, body: null },
      { ...base, orderKey: 'order-1' },
      { ...base, orderKey: 'order-2' },
    ];
    const digests = new Set([base, ...variants].map(itemDigest));
    expect(digests.size).toBe(variants.length + 1);
  });
});

describe('batchIds', () => {
  const a: Envelope = { url: URL_, body: 'a' };
  const b: Envelope = { url: URL_, body: 'b' };

  it('never depends on position: an item keeps its id in any batch with the same key', () => {
    const whole = batchIds([a, b], 'k', 'acme', counter());
    const alone = batchIds([b], 'k', 'acme', counter());
    expect(whole.map((x) => x.from)).toEqual(['content', 'content']);
    expect(alone[0]).toEqual(whole[1]);
    expect(whole[0]!.id).not.toBe(whole[1]!.id);
    expect(whole[0]!.id).toBe(`acme:k:${itemDigest(a)}`);
    expect(batchIds([a], 'k', 'other', counter())[0]!.id).toBe(`other:k:${itemDigest(a)}`);
  });

  it('keeps item ids; without a key, new ids', () => {
    expect(batchIds([{ ...a, id: 'own' }, b], undefined, 'acme', counter())).toEqual([
      { id: 'own', from: 'body' },
      { id: 'new-1', from: 'new' },
    ]);
  });

  it("refuses identical items without ids, naming the later one; repeated explicit ids are the client's choice", () => {
    expect(refusal(() => batchIds([a, b, { ...a, delay: 10 }], 'k', 'acme', counter())).field).toBe('callbacks[2]');
    expect(refusal(() => batchIds([{ ...b, id: `acme:k:${itemDigest(a)}` }, a], 'k', 'acme', counter())).field).toBe('callbacks[1]');
    expect(batchIds([a, a], undefined, 'acme', counter()).map((x) => x.id)).toEqual(['new-1', 'new-2']);
    expect(
      batchIds(
        [
          { ...a, id: 'e' },
          { ...b, id: 'e' },
        ],
        'k',
        'acme',
        counter(),
      ).map((x) => x.id),
    ).toEqual(['e', 'e']);
  });

  it('refuses a key too long for <token name>:<key>:<digest> only when an item needs it', () => {
    const most = maxKeyLength('acme', true);
    const long = 'k'.repeat(most + 1);
    expect(refusal(() => batchIds([a], long, 'acme', counter())).field).toBe('Idempotency-Key');
    expect(batchIds([{ ...a, id: 'own' }], long, 'acme', counter())[0]!.id).toBe('own');
    expect(isValidId(batchIds([a], 'k'.repeat(most), 'acme', counter())[0]!.id)).toBe(true);
  });
});

describe('resendAdvice', () => {
  it('tells how to keep the id, by where it came from', () => {
    expect(resendAdvice({ id: 'x', from: 'body' })).toBe('send it again with the same id "x"');
    expect(resendAdvice({ id: 'x', from: 'key' })).toContain('same Idempotency-Key');
    expect(resendAdvice({ id: 'k:d', from: 'content' })).toContain('"id": "k:d"');
    expect(resendAdvice({ id: 'u', from: 'new' })).toBe('send it again with "id": "u" in the callback, so that it keeps this id');
  });
});
