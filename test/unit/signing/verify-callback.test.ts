import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import { isRelayError } from '../../../src/errors.js';
import { signCallback } from '../../../src/signing/sign-callback.js';
import { parseSigningSecrets } from '../../../src/formats/signing-secrets.js';
import { VECTOR } from '../../support/webhook-vector.js';
import {
  SignatureError,
  verifyCallback,
  type SignatureErrorCode,
  type VerifyCallbackOptions,
} from '../../../src/signing/verify-callback.js';

// A signature of the right length that matches nothing (from the same reference test suites).
const FOREIGN = 'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=';
const OLD_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const NOW = 1_700_000_000;

const vectorHeaders = (): Record<string, string> => ({
  'webhook-id': VECTOR.id,
  'webhook-timestamp': String(VECTOR.timestamp),
  'webhook-signature': VECTOR.signature,
});

/** Verifies the reference vector, with `overrides` applied, at the vector's own time. */
const verifyVector = (overrides: Partial<VerifyCallbackOptions> = {}) =>
  verifyCallback({ secret: VECTOR.secret, headers: vectorHeaders(), body: VECTOR.payload, nowSeconds: VECTOR.timestamp, ...overrides });

/** Headers signed by callback-relay itself at NOW. */
const signed = (secrets = VECTOR.secret, body = '{"paid":true}', timestamp = NOW) =>
  signCallback(parseSigningSecrets(secrets, 'signingSecrets'), 'order-42-paid', timestamp, body);

function expectRefused(fn: () => unknown, code: SignatureErrorCode): SignatureError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SignatureError);
    expect((error as SignatureError).code).toBe(code);
    expect((error as SignatureError).name).toBe('SignatureError');
    return error as SignatureError;
  }
  throw new Error(`expected ${code}, nothing was thrown`);
}

describe('verifyCallback: the Standard Webhooks reference vector', () => {
  it('accepts it and returns the id and timestamp', () => {
    expect(verifyVector()).toEqual({ id: VECTOR.id, timestamp: VECTOR.timestamp });
  });

  it('accepts it with the bare base64 secret, as the reference libraries do', () => {
    expect(verifyVector({ secret: VECTOR.secret.slice('whsec_'.length) }).id).toBe(VECTOR.id);
  });

  it('accepts the body as a Buffer', () => {
    expect(verifyVector({ body: Buffer.from(VECTOR.payload) }).id).toBe(VECTOR.id);
  });

  it('accepts the reference multi-signature header with one valid entry among others', () => {
    const headers = {
      ...vectorHeaders(),
      'webhook-signature': [FOREIGN, FOREIGN.replace('v1,', 'v2,'), VECTOR.signature, FOREIGN].join(' '),
    };
    expect(verifyVector({ headers }).id).toBe(VECTOR.id);
  });
});

describe('verifyCallback: round trip with signCallback', () => {
  it('accepts what callback-relay signs', () => {
    expect(verifyCallback({ secret: VECTOR.secret, headers: signed(), body: '{"paid":true}', nowSeconds: NOW })).toEqual({
      id: 'order-42-paid',
      timestamp: NOW,
    });
  });

  it('during rotation, a receiver holding either secret accepts the two-signature header', () => {
    const headers = signed(`${VECTOR.secret} ${OLD_SECRET}`);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const secret of [VECTOR.secret, OLD_SECRET, [OLD_SECRET, VECTOR.secret], `${OLD_SECRET} ${VECTOR.secret}`]) {
      expect(verifyCallback({ secret, headers, body: '{"paid":true}', nowSeconds: NOW }).id).toBe('order-42-paid');
    }
  });

  it('a receiver holding both secrets accepts a sender that signs with only one', () => {
    const secret = [VECTOR.secret, OLD_SECRET];
    expect(verifyCallback({ secret, headers: signed(OLD_SECRET), body: '{"paid":true}', nowSeconds: NOW }).id).toBe('order-42-paid');
  });

  it('refuses a signature made with a secret the receiver does not hold', () => {
    expectRefused(
      () => verifyCallback({ secret: VECTOR.secret, headers: signed(OLD_SECRET), body: '{"paid":true}', nowSeconds: NOW }),
      'CR_ERR_SIGNATURE_INVALID',
    );
  });
});

describe('verifyCallback: tampering', () => {
  it('refuses a changed body, even by one space (e.g. re-serialised JSON)', () => {
    expectRefused(() => verifyVector({ body: '{"test":2432232314}' }), 'CR_ERR_SIGNATURE_INVALID');
    expectRefused(() => verifyVector({ body: '{"test": 2432232315}' }), 'CR_ERR_SIGNATURE_INVALID');
  });

  it('refuses a changed id', () => {
    expectRefused(() => verifyVector({ headers: { ...vectorHeaders(), 'webhook-id': `${VECTOR.id}x` } }), 'CR_ERR_SIGNATURE_INVALID');
  });

  it('refuses a changed timestamp, even one still within the tolerance', () => {
    const headers = { ...vectorHeaders(), 'webhook-timestamp': String(VECTOR.timestamp + 1) };
    expectRefused(() => verifyVector({ headers }), 'CR_ERR_SIGNATURE_INVALID');
  });

  it('refuses a timestamp written differently from the one signed', () => {
    expectRefused(
      () => verifyVector({ headers: { ...vectorHeaders(), 'webhook-timestamp': `0${VECTOR.timestamp}` } }),
      'CR_ERR_SIGNATURE_INVALID',
    );
  });

  it.each([
    ['a truncated signature', VECTOR.signature.slice(0, 8)],
    ['an empty v1 signature', 'v1,'],
    ['a longer signature', `${VECTOR.signature}AAAA`],
    ['a non-base64 signature', 'v1,dawfeoifkpqwoekfpqoekf'],
    ['non-ASCII of the same length', `v1,${'é'.repeat(22)}=`],
  ])('refuses %s without throwing anything but SignatureError', (_, signature) => {
    expectRefused(() => verifyVector({ headers: { ...vectorHeaders(), 'webhook-signature': signature } }), 'CR_ERR_SIGNATURE_INVALID');
  });

  it('ignores unknown versions: a valid MAC labelled v1a or v2 does not count', () => {
    const mac = VECTOR.signature.slice(3);
    const error = expectRefused(
      () => verifyVector({ headers: { ...vectorHeaders(), 'webhook-signature': `v1a,${mac} v2,${mac}` } }),
      'CR_ERR_SIGNATURE_INVALID',
    );
    expect(error.message).toContain('no v1 signature');
  });
});

describe('verifyCallback: timestamp tolerance', () => {
  const at = (nowSeconds: number, toleranceSeconds?: number) =>
    verifyVector({ nowSeconds, ...(toleranceSeconds === undefined ? {} : { toleranceSeconds }) });

  it('accepts up to 300 seconds either way by default, inclusive', () => {
    expect(at(VECTOR.timestamp + 300).id).toBe(VECTOR.id);
    expect(at(VECTOR.timestamp - 300).id).toBe(VECTOR.id);
  });

  it('refuses an old timestamp (replay) as expired', () => {
    expect(expectRefused(() => at(VECTOR.timestamp + 301), 'CR_ERR_SIGNATURE_EXPIRED').message).toContain('301s in the past');
  });

  it('refuses a future timestamp as expired too', () => {
    expect(expectRefused(() => at(VECTOR.timestamp - 301), 'CR_ERR_SIGNATURE_EXPIRED').message).toContain('301s in the future');
  });

  it('honours a custom tolerance, including 0', () => {
    expect(at(VECTOR.timestamp + 3_600, 3_600).id).toBe(VECTOR.id);
    expect(at(VECTOR.timestamp, 0).id).toBe(VECTOR.id);
    expectRefused(() => at(VECTOR.timestamp + 1, 0), 'CR_ERR_SIGNATURE_EXPIRED');
  });

  it('uses the clock when nowSeconds is not given', () => {
    const now = Math.floor(Date.now() / 1000);
    expect(verifyCallback({ secret: VECTOR.secret, headers: signed(VECTOR.secret, '{}', now), body: '{}' }).timestamp).toBe(now);
    expectRefused(() => verifyVector({ nowSeconds: undefined }), 'CR_ERR_SIGNATURE_EXPIRED');
  });

  it.each([['hello'], ['1614265330.5'], ['-1614265330'], ['+1614265330'], ['1e9'], ['9'.repeat(16)]])(
    'refuses the malformed timestamp %j',
    (timestamp) => {
      expectRefused(() => verifyVector({ headers: { ...vectorHeaders(), 'webhook-timestamp': timestamp } }), 'CR_ERR_SIGNATURE_INVALID');
    },
  );
});

describe('verifyCallback: headers', () => {
  it.each([['webhook-id'], ['webhook-timestamp'], ['webhook-signature']])('refuses a request without %s', (name) => {
    const headers: Record<string, string> = vectorHeaders();
    delete headers[name];
    expect(expectRefused(() => verifyVector({ headers }), 'CR_ERR_SIGNATURE_MISSING').message).toContain(name);
    expectRefused(() => verifyVector({ headers: { ...vectorHeaders(), [name]: '  ' } }), 'CR_ERR_SIGNATURE_MISSING');
    expectRefused(() => verifyVector({ headers: { ...vectorHeaders(), [name]: [] } }), 'CR_ERR_SIGNATURE_MISSING');
    expectRefused(() => verifyVector({ headers: { ...vectorHeaders(), [name]: undefined } }), 'CR_ERR_SIGNATURE_MISSING');
  });

  it('finds headers whatever the case of their names', () => {
    const headers = { 'Webhook-Id': VECTOR.id, 'WEBHOOK-TIMESTAMP': String(VECTOR.timestamp), 'webhook-Signature': VECTOR.signature };
    expect(verifyVector({ headers }).id).toBe(VECTOR.id);
  });

  it('takes Node IncomingHttpHeaders as they are', () => {
    const headers: IncomingHttpHeaders = {
      host: 'example.com',
      'content-type': 'application/json',
      'set-cookie': ['a=b'],
      ...vectorHeaders(),
    };
    expect(verifyVector({ headers }).id).toBe(VECTOR.id);
  });

  it('takes a fetch Headers object', () => {
    expect(verifyVector({ headers: new Headers(vectorHeaders()) }).id).toBe(VECTOR.id);
    const headers = new Headers(vectorHeaders());
    headers.delete('webhook-signature');
    expectRefused(() => verifyVector({ headers }), 'CR_ERR_SIGNATURE_MISSING');
  });

  it('reads array-valued headers: signatures from every entry, a repeated identical id once', () => {
    const headers = {
      'webhook-id': [VECTOR.id, VECTOR.id],
      'webhook-timestamp': [String(VECTOR.timestamp)],
      'webhook-signature': [FOREIGN, VECTOR.signature],
    };
    expect(verifyVector({ headers }).id).toBe(VECTOR.id);
  });

  it('reads a repeated signature header that was joined with ", "', () => {
    expect(verifyVector({ headers: { ...vectorHeaders(), 'webhook-signature': `${FOREIGN}, ${VECTOR.signature}` } }).id).toBe(VECTOR.id);
    const joined = new Headers(vectorHeaders());
    joined.set('webhook-signature', FOREIGN);
    joined.append('webhook-signature', VECTOR.signature);
    expect(verifyVector({ headers: joined }).id).toBe(VECTOR.id);
  });

  it('refuses conflicting values for the id or the timestamp', () => {
    expectRefused(() => verifyVector({ headers: { ...vectorHeaders(), 'webhook-id': [VECTOR.id, 'other'] } }), 'CR_ERR_SIGNATURE_INVALID');
    const mixedCase = { ...vectorHeaders(), 'Webhook-Timestamp': String(VECTOR.timestamp + 1) };
    expectRefused(() => verifyVector({ headers: mixedCase }), 'CR_ERR_SIGNATURE_INVALID');
  });

  it('ignores a plain header that happens to be named "get"', () => {
    expect(verifyVector({ headers: { ...vectorHeaders(), get: 'x' } }).id).toBe(VECTOR.id);
  });
});

describe('verifyCallback: receiver configuration errors', () => {
  it.each([[''], ['whsec_'], ['whsec_***'], [[]]])('throws CR_ERR_CONFIG (not SignatureError) for the secret %j', (secret) => {
    try {
      verifyVector({ secret });
      expect.unreachable();
    } catch (error) {
      expect(isRelayError(error, 'CR_ERR_CONFIG')).toBe(true);
      expect((error as { field?: string }).field).toBe('secret');
    }
  });

  it.each([[-1], [Number.NaN], [Number.POSITIVE_INFINITY]])('throws CR_ERR_CONFIG for toleranceSeconds %s', (toleranceSeconds) => {
    expect(() => verifyVector({ toleranceSeconds })).toThrow(expect.objectContaining({ code: 'CR_ERR_CONFIG', field: 'toleranceSeconds' }));
  });
});
