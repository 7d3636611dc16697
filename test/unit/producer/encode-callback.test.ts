import { describe, it, expect } from 'vitest';
import { isRelayError, type RelayError } from '../../../src/errors.js';
import type { Callback } from '../../../src/message/callback.js';
import { encodeCallback } from '../../../src/producer/encode-callback.js';

const LIMIT = 1_048_576;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function encodeError(callback: unknown, limit = LIMIT): RelayError {
  try {
    encodeCallback(callback as Callback, limit);
  } catch (error) {
    if (isRelayError(error, 'CR_ERR_INVALID_CALLBACK')) return error;
    throw error;
  }
  throw new Error('encodeCallback accepted the callback');
}

describe('encodeCallback', () => {
  it('keeps a given id and encodes the callback as UTF-8 JSON', () => {
    const callback: Callback = { id: 'order-42', url: 'https://example.com/hook', body: { amount: 5, note: 'für' } };
    const { id, content } = encodeCallback(callback, LIMIT);
    expect(id).toBe('order-42');
    expect(Buffer.isBuffer(content)).toBe(true);
    expect(JSON.parse(content.toString('utf8'))).toEqual(callback);
  });

  it('carries a policy name on the wire, checking only its shape', () => {
    const { content } = encodeCallback({ url: 'https://example.com/hook', body: 1, policy: 'payment' }, LIMIT);
    expect(JSON.parse(content.toString('utf8'))).toMatchObject({ policy: 'payment' });
    expect(encodeError({ url: 'https://example.com/hook', body: 1, policy: 'pay ment' }).field).toBe('policy');
  });

  it('generates a UUID id when none is given and writes it into the message', () => {
    const { id, content } = encodeCallback({ url: 'https://example.com/hook', body: null }, LIMIT);
    expect(id).toMatch(UUID);
    expect(JSON.parse(content.toString('utf8'))).toEqual({ url: 'https://example.com/hook', body: null, id });
  });

  it('generates a fresh id for each callback without one', () => {
    const callback: Callback = { url: 'https://example.com/hook', body: 1 };
    expect(encodeCallback(callback, LIMIT).id).not.toBe(encodeCallback(callback, LIMIT).id);
  });

  it('does not modify the caller’s callback', () => {
    const callback: Callback = { url: 'https://example.com/hook', body: 1 };
    encodeCallback(callback, LIMIT);
    expect(callback).toEqual({ url: 'https://example.com/hook', body: 1 });
  });

  it('keeps method and headers', () => {
    const callback: Callback = { id: 'a', url: 'https://example.com', body: 'x', method: 'PATCH', headers: { 'X-Tenant': 't' } };
    expect(JSON.parse(encodeCallback(callback, LIMIT).content.toString())).toEqual(callback);
  });

  it('validates first, naming the field', () => {
    const error = encodeError({ url: 'ftp://example.com', body: 1 });
    expect(error.field).toBe('url');
    expect(encodeError({ url: 'https://example.com', body: 1, headers: { Host: 'x' } }).field).toBe('headers.Host');
    expect(encodeError({ url: 'https://example.com' }).field).toBe('body');
  });

  it('rejects a circular body as field body', () => {
    const body: Record<string, unknown> = { a: 1 };
    body.self = body;
    const error = encodeError({ url: 'https://example.com', body });
    expect(error.field).toBe('body');
    expect(error.message).toMatch(/JSON-serialisable/);
    expect(error.cause).toBeInstanceOf(TypeError);
  });

  it('rejects a BigInt body as field body', () => {
    expect(encodeError({ url: 'https://example.com', body: 10n }).field).toBe('body');
    expect(encodeError({ url: 'https://example.com', body: { n: 10n } }).field).toBe('body');
  });

  it('rejects a body that serialises to nothing', () => {
    expect(encodeError({ url: 'https://example.com', body: () => 1 }).field).toBe('body');
    expect(encodeError({ url: 'https://example.com', body: Symbol('x') }).field).toBe('body');
    expect(encodeError({ url: 'https://example.com', body: { toJSON: () => undefined } }).field).toBe('body');
  });

  it('rejects a body whose toJSON throws', () => {
    const body = {
      toJSON: () => {
        throw new Error('boom');
      },
    };
    expect(encodeError({ url: 'https://example.com', body }).message).toMatch(/boom/);
  });

  it('accepts a message of exactly the size limit and rejects one byte more', () => {
    const base: Callback = { id: 'fixed', url: 'https://example.com', body: '' };
    const overhead = encodeCallback(base, LIMIT).content.length;
    const limit = overhead + 100;
    expect(encodeCallback({ ...base, body: 'x'.repeat(100) }, limit).content.length).toBe(limit);
    const error = encodeError({ ...base, body: 'x'.repeat(101) }, limit);
    expect(error.field).toBe('body');
    expect(error.message).toContain(`${limit + 1} bytes`);
    expect(error.message).toContain('MAX_PAYLOAD_BYTES');
  });

  it('measures the limit in UTF-8 bytes, not characters', () => {
    const base: Callback = { id: 'fixed', url: 'https://example.com', body: '' };
    const overhead = encodeCallback(base, LIMIT).content.length;
    expect(() => encodeCallback({ ...base, body: 'é'.repeat(10) }, overhead + 10)).toThrow(/bytes/);
    expect(encodeCallback({ ...base, body: 'é'.repeat(10) }, overhead + 20).content.length).toBe(overhead + 20);
  });
});
