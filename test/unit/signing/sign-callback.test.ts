import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isRelayError } from '../../../src/errors.js';
import { computeSignature, signCallback } from '../../../src/signing/sign-callback.js';
import { parseSigningSecrets } from '../../../src/formats/signing-secrets.js';
import { VECTOR } from '../../support/webhook-vector.js';

const specKeys = parseSigningSecrets(VECTOR.secret, 'signingSecrets');

describe('signCallback', () => {
  it('reproduces the published Standard Webhooks vector', () => {
    expect(signCallback(specKeys, VECTOR.id, VECTOR.timestamp, VECTOR.payload)).toEqual({
      'webhook-id': VECTOR.id,
      'webhook-timestamp': '1614265330',
      'webhook-signature': VECTOR.signature,
    });
  });

  it('agrees with the spec definition computed independently: base64(HMAC-SHA256(key, id.ts.body))', () => {
    const key = Buffer.from(VECTOR.secret.slice('whsec_'.length), 'base64');
    const expected = createHmac('sha256', key).update(`${VECTOR.id}.${VECTOR.timestamp}.${VECTOR.payload}`).digest('base64');
    expect(`v1,${expected}`).toBe(VECTOR.signature);
  });

  it('signs a Buffer body exactly like the same bytes as a string', () => {
    const body = '{"name":"Zoë","emoji":"✓"}';
    const fromString = signCallback(specKeys, 'id-1', 1_700_000_000, body);
    expect(signCallback(specKeys, 'id-1', 1_700_000_000, Buffer.from(body, 'utf8'))).toEqual(fromString);
  });

  it('signs with every key, in the configured order, space-separated (rotation)', () => {
    const other = `whsec_${randomBytes(32).toString('base64')}`;
    const keys = parseSigningSecrets(`${other} ${VECTOR.secret}`, 'signingSecrets');
    const headers = signCallback(keys, VECTOR.id, VECTOR.timestamp, VECTOR.payload);
    const signatures = headers['webhook-signature'].split(' ');
    expect(signatures).toHaveLength(2);
    expect(signatures[1]).toBe(VECTOR.signature);
    expect(signatures[0]).toBe(`v1,${computeSignature(keys[0]!.key, VECTOR.id, String(VECTOR.timestamp), VECTOR.payload)}`);
    expect(signatures[0]).not.toBe(signatures[1]);
  });

  it('changes the signature when the id, the timestamp or a single body byte changes', () => {
    const base = signCallback(specKeys, VECTOR.id, VECTOR.timestamp, VECTOR.payload)['webhook-signature'];
    expect(signCallback(specKeys, `${VECTOR.id}x`, VECTOR.timestamp, VECTOR.payload)['webhook-signature']).not.toBe(base);
    expect(signCallback(specKeys, VECTOR.id, VECTOR.timestamp + 1, VECTOR.payload)['webhook-signature']).not.toBe(base);
    expect(signCallback(specKeys, VECTOR.id, VECTOR.timestamp, '{"test":2432232314}')['webhook-signature']).not.toBe(base);
  });

  it('returns plain string headers, ready to spread into a request', () => {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...signCallback(specKeys, 'id', 1, '{}') };
    expect(Object.keys(headers)).toEqual(['content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature']);
  });

  it('is pure: the same input always gives the same headers', () => {
    const first = signCallback(specKeys, 'order-42-paid', 1_700_000_000, '{}');
    expect(signCallback(specKeys, 'order-42-paid', 1_700_000_000, '{}')).toEqual(first);
  });

  it('refuses to sign without a key', () => {
    expect(() => signCallback([], 'id', 1, '{}')).toThrow(expect.objectContaining({ code: 'CR_ERR_CONFIG' }));
  });

  it.each([[''], [' padded'], ['padded '], ['line\nbreak'], ['nul\0'], ['zoë'], ['tab\tinside']])(
    'refuses an id the receiver would not get byte for byte: %j',
    (id) => {
      try {
        signCallback(specKeys, id, 1, '{}');
        expect.unreachable();
      } catch (error) {
        expect(isRelayError(error, 'CR_ERR_INVALID_CALLBACK')).toBe(true);
        expect((error as { field?: string }).field).toBe('id');
      }
    },
  );

  it('accepts ids with inner spaces and punctuation, including dots', () => {
    expect(signCallback(specKeys, 'a b.c:d/e', 1, '{}')['webhook-id']).toBe('a b.c:d/e');
  });

  it.each([[-1], [1.5], [Number.NaN], [Number.POSITIVE_INFINITY], [2 ** 53]])('refuses the timestamp %s', (timestamp) => {
    expect(() => signCallback(specKeys, 'id', timestamp, '{}')).toThrow(RangeError);
  });
});
