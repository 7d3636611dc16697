import { describe, it, expect } from 'vitest';
import { isRelayError, type RelayError } from '../../../src/errors.js';
import { MAX_ID_LENGTH, MAX_URL_LENGTH, validateCallback } from '../../../src/message/callback.js';

const valid = { url: 'https://example.com/hook', body: { event: 'paid' } };

/** The CR_ERR_INVALID_CALLBACK error validateCallback throws for `value`. */
function invalid(value: unknown): RelayError {
  try {
    validateCallback(value);
  } catch (error) {
    if (isRelayError(error, 'CR_ERR_INVALID_CALLBACK')) return error;
    throw error;
  }
  throw new Error(`validateCallback accepted ${JSON.stringify(value)}`);
}

const expectField = (value: unknown, field: string): void => {
  const error = invalid(value);
  expect(error.code).toBe('CR_ERR_INVALID_CALLBACK');
  expect(error.field).toBe(field);
  expect(error.message.startsWith(`${field}: `)).toBe(true);
};

describe('validateCallback: accepted', () => {
  it('returns a minimal callback unchanged', () => {
    expect(validateCallback(valid)).toBe(valid);
  });

  it('accepts every field', () => {
    const full = {
      id: 'order-42',
      url: 'http://localhost:8080/x?y=1',
      body: [1, 'two'],
      headers: { Authorization: 'Bearer t', 'X-Tenant': 'a' },
      method: 'PUT',
    };
    expect(validateCallback(full)).toEqual(full);
  });

  it.each([null, 0, false, '', 'text', [], {}])('accepts the JSON body %j', (body) => {
    expect(() => validateCallback({ url: valid.url, body })).not.toThrow();
  });

  it.each(['POST', 'PUT', 'PATCH'])('accepts method %s', (method) => {
    expect(() => validateCallback({ ...valid, method })).not.toThrow();
  });

  it('accepts an id of exactly the maximum length and a URL of exactly the maximum length', () => {
    expect(() => validateCallback({ ...valid, id: 'i'.repeat(MAX_ID_LENGTH) })).not.toThrow();
    const url = `https://example.com/${'a'.repeat(MAX_URL_LENGTH - 'https://example.com/'.length)}`;
    expect(url).toHaveLength(MAX_URL_LENGTH);
    expect(() => validateCallback({ ...valid, url })).not.toThrow();
  });

  it('accepts empty headers and header values with tabs and Latin-1', () => {
    expect(() => validateCallback({ ...valid, headers: {} })).not.toThrow();
    expect(() => validateCallback({ ...valid, headers: { 'X-Note': 'a\tb ü', 'X-Empty': '' } })).not.toThrow();
  });

  it('refuses header values an HTTP client cannot send (beyond Latin-1, control characters)', () => {
    for (const value of ['a – b', 'bell\u0007', 'del\u007f']) {
      expect(() => validateCallback({ ...valid, headers: { 'X-Note': value } })).toThrow(
        expect.objectContaining({ field: 'headers.X-Note' }),
      );
    }
  });
});

describe('validateCallback: the callback itself', () => {
  it.each([null, undefined, 42, 'x', true, [valid]])('rejects %j as not an object', (value) => {
    expectField(value, 'callback');
  });

  it.each(['callbackUrl', 'Url', 'payload', 'attempt', 'delay'])('rejects the unknown top-level key %s', (key) => {
    expectField({ ...valid, [key]: 1 }, key);
  });

  it('reports an unknown key before any other problem', () => {
    expectField({ extra: true }, 'extra');
  });
});

describe('validateCallback: url', () => {
  it('is required', () => {
    expectField({ body: 1 }, 'url');
    expectField({ url: '', body: 1 }, 'url');
  });

  it.each([42, null, true, { href: 'https://x' }, ['https://x']])('must be a string, not %j', (url) => {
    expectField({ url, body: 1 }, 'url');
  });

  it.each(['not a url', 'example.com/hook', '//example.com', 'http://', 'https://exa mple.com'])('must parse: %j', (url) => {
    expectField({ url, body: 1 }, 'url');
  });

  it.each(['ftp://example.com/x', 'file:///etc/passwd', 'javascript:alert(1)', 'ws://example.com', 'mailto:a@b.c'])(
    'must be http or https: %s',
    (url) => {
      const error = invalid({ url, body: 1 });
      expect(error.field).toBe('url');
      expect(error.message).toMatch(/must be http or https/);
    },
  );

  it('may be at most MAX_URL_LENGTH characters', () => {
    expect(MAX_URL_LENGTH).toBe(4_096);
    const url = `https://example.com/${'a'.repeat(MAX_URL_LENGTH)}`;
    const error = invalid({ url, body: 1 });
    expect(error.field).toBe('url');
    expect(error.message).toMatch(/longer than 4096/);
  });

  it('quotes at most 100 characters of an unparseable URL', () => {
    const error = invalid({ url: `bad ${'x'.repeat(500)}`, body: 1 });
    expect(error.message.length).toBeLessThan(200);
  });
});

describe('validateCallback: body', () => {
  it('is required', () => {
    expectField({ url: valid.url }, 'body');
  });

  it('may not be undefined', () => {
    expectField({ url: valid.url, body: undefined }, 'body');
  });
});

describe('validateCallback: id', () => {
  it.each([
    ['empty', ''],
    ['a number', 42],
    ['null', null],
    ['an object', { id: 1 }],
    ['too long', 'i'.repeat(MAX_ID_LENGTH + 1)],
  ])('rejects an id that is %s', (_what, id) => {
    expectField({ ...valid, id }, 'id');
  });

  it('is optional', () => {
    expect(validateCallback({ ...valid, id: undefined }).id).toBeUndefined();
  });
});

describe('validateCallback: method', () => {
  it.each(['GET', 'DELETE', 'post', 'Put', '', 1, null])('rejects %j', (method) => {
    expectField({ ...valid, method }, 'method');
  });
});

describe('validateCallback: policy', () => {
  it.each(['payment', 'p', 'tier-1.fast_lane:v2', 'x'.repeat(64)])('accepts the name %j: only its shape is checked', (policy) => {
    expect(validateCallback({ ...valid, policy })).toMatchObject({ policy });
  });

  it.each(['', '-payment', 'pay ment', 'päyment', 'x'.repeat(65), 7, null, ['payment']])('rejects %j', (policy) => {
    expectField({ ...valid, policy }, 'policy');
  });
});

describe('validateCallback: orderKey', () => {
  it.each(['tenant-42', 'k', 'a b', '~!', 'x'.repeat(MAX_ID_LENGTH)])('accepts %j: printable ASCII, spaces inside', (orderKey) => {
    expect(validateCallback({ ...valid, orderKey })).toMatchObject({ orderKey });
  });

  it.each([
    ['empty', ''],
    ['256 characters', 'x'.repeat(MAX_ID_LENGTH + 1)],
    ['a control character', 'a\u0001b'],
    ['a newline', 'a\nb'],
    ['DEL', 'a\u007f'],
    ['a leading space', ' key'],
    ['a trailing space', 'key '],
    ['non-ASCII', 'clé'],
    ['a number', 42],
    ['null', null],
    ['an array', ['key']],
  ])('rejects %s', (_what, orderKey) => {
    expectField({ ...valid, orderKey }, 'orderKey');
  });
});

describe('validateCallback: headers', () => {
  it.each([null, 'X-A: 1', ['X-A', '1'], 42])('must be an object, not %j', (headers) => {
    expectField({ ...valid, headers }, 'headers');
  });

  it.each(['', 'X A', 'X:A', 'X-Ä', 'a/b', '(x)', 'x"y'])('rejects the header name %j', (name) => {
    expectField({ ...valid, headers: { [name]: 'v' } }, `headers.${name}`);
  });

  it.each(['a\rb', 'a\nb', 'a\r\nX-Injected: 1', 'a\0b'])('rejects the value %j with CR, LF or NUL', (value) => {
    const error = invalid({ ...valid, headers: { 'X-Ok': value } });
    expect(error.field).toBe('headers.X-Ok');
    expect(error.message).toMatch(/CR, LF or NUL/);
  });

  it.each([1, true, null, ['a'], { a: 'b' }])('rejects the non-string value %j', (value) => {
    expectField({ ...valid, headers: { 'X-Ok': value } }, 'headers.X-Ok');
  });

  it('rejects a value longer than 8192 characters', () => {
    expectField({ ...valid, headers: { 'X-Big': 'v'.repeat(8_193) } }, 'headers.X-Big');
    expect(() => validateCallback({ ...valid, headers: { 'X-Big': 'v'.repeat(8_192) } })).not.toThrow();
  });

  it.each([
    'host',
    'Host',
    'content-length',
    'Content-Length',
    'content-type',
    'transfer-encoding',
    'Connection',
    'keep-alive',
    'upgrade',
    'te',
    'trailer',
    'proxy-authorization',
    'Proxy-Connection',
    'webhook-id',
    'Webhook-Signature',
    'x-callback-attempt',
    'X-Callback-Reason',
  ])('rejects the reserved header %s', (name) => {
    const error = invalid({ ...valid, headers: { [name]: 'v' } });
    expect(error.field).toBe(`headers.${name}`);
    expect(error.message).toMatch(/set by the relay/);
  });

  it.each(['Authorization', 'X-Request-Id', 'x-callback', 'webhook', 'hosts', 'tea', 'X-Hub-Signature-256'])(
    'allows the ordinary header %s',
    (name) => {
      expect(() => validateCallback({ ...valid, headers: { [name]: 'v' } })).not.toThrow();
    },
  );

  it('names the first offending header', () => {
    expectField({ ...valid, headers: { 'X-Ok': 'v', Host: 'evil', 'X-Bad': 1 } }, 'headers.Host');
  });
});
