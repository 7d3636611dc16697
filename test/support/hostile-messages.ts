import { randomInt } from './prng.js';

/** A seeded source of numbers in [0, 1) (mulberry32 from prng.ts). */
export type Rng = () => number;

/** One message body published raw, with the name of the generator that made it. */
export interface RawBody {
  kind: string;
  content: Buffer;
}

const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T;
const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8');
const bytes = (rng: Rng, length: number): Buffer => Buffer.from(Array.from({ length }, () => randomInt(rng, 0, 255)));
const word = (rng: Rng, min = 1, max = 12): string =>
  Array.from({ length: randomInt(rng, min, max) }, () => pick(rng, 'abcdefghijklmnopqrstuvwxyz0123456789-_'.split(''))).join('');

/** Any JSON value, a few levels deep, with unicode strings (a body the relay must carry unchanged). */
export function randomJson(rng: Rng, depth = 0): unknown {
  const roll = rng();
  if (depth > 2 || roll < 0.4) {
    return pick(rng, [null, true, false, randomInt(rng, -1e6, 1e6), rng() * 1e3, word(rng), 'zoë ✓ 日本 \u{1F600}', '', '\\"quoted"\n']);
  }
  if (roll < 0.7) return Array.from({ length: randomInt(rng, 0, 4) }, () => randomJson(rng, depth + 1));
  return Object.fromEntries(Array.from({ length: randomInt(rng, 0, 4) }, () => [word(rng), randomJson(rng, depth + 1)]));
}

/** Valid extra headers: token names that are not reserved, visible-ASCII values. */
function goodHeaders(rng: Rng): Record<string, string> {
  const visible = (): string =>
    Array.from({ length: randomInt(rng, 0, 40) }, () => String.fromCharCode(randomInt(rng, 0x21, 0x7e))).join('');
  return Object.fromEntries(Array.from({ length: randomInt(rng, 1, 5) }, (_, i) => [`x-${word(rng)}-${i}`, visible()]));
}

/** A valid callback to `origin/good/<n>`, with id `good-<n>` in the body or (sometimes) only as message_id. */
export function goodCallback(rng: Rng, origin: string, n: number): { id: string; path: string; content: Buffer; idInBody: boolean } {
  const id = `good-${n}`;
  const path = `/good/${n}`;
  const callback: Record<string, unknown> = { url: `${origin}${path}`, body: randomJson(rng) };
  const idInBody = rng() < 0.7;
  if (idInBody) callback.id = id;
  if (rng() < 0.5) callback.headers = goodHeaders(rng);
  if (rng() < 0.3) callback.method = pick(rng, ['POST', 'PUT', 'PATCH']);
  return { id, path, content: json(callback), idInBody };
}

/** Valid fields to put next to one bad field, so that field alone makes the callback invalid. */
const base = (origin: string, rng: Rng): Record<string, unknown> => ({ url: `${origin}/never/${word(rng)}`, body: randomJson(rng) });
const withField = (origin: string, rng: Rng, field: string, value: unknown): Buffer => json({ ...base(origin, rng), [field]: value });
const withHeaders = (origin: string, rng: Rng, headers: unknown): Buffer => withField(origin, rng, 'headers', headers);

/**
 * Generators of messages that break the wire contract. Each one is invalid by construction, whatever
 * the random draws: the worker must dead-letter every one of them with reason `invalid`.
 */
export const BAD: Record<string, (rng: Rng, origin: string) => Buffer> = {
  'not JSON': (rng) =>
    Buffer.from(
      pick(rng, ['not json', '{oops', "{'url': 'http://x/'}", 'undefined', 'NaN', '{"url":"http://x/",}', '<xml/>']) + word(rng, 0, 20),
    ),
  'truncated JSON': (rng, origin) => {
    const whole = JSON.stringify({ ...base(origin, rng), id: `t-${word(rng)}` });
    return Buffer.from(whole.slice(0, randomInt(rng, 0, whole.length - 1)));
  },
  'missing url': (rng) => json({ body: randomJson(rng), id: `no-url-${word(rng)}` }),
  'javascript: url': (rng) => json({ url: `javascript:alert(${randomInt(rng, 0, 99)})`, body: 1 }),
  'non-http url': (rng) =>
    json({
      url: pick(rng, [
        'ftp://127.0.0.1/x',
        'file:///etc/passwd',
        'data:text/plain,hi',
        'mailto:a@b.c',
        'ws://127.0.0.1/',
        'gopher://127.0.0.1:70/',
      ]),
      body: 1,
    }),
  'relative url': (rng) => json({ url: pick(rng, ['/hooks/x', '../x', '//127.0.0.1/x', 'hooks', '?a=1', '#x']), body: 1 }),
  'unparsable url': (rng) =>
    json({
      url: pick(rng, [
        'http://',
        'https://',
        'http://exa mple.com/',
        'http://[::1',
        'http://256.256.256.256/',
        'http://127.0.0.1:99999/',
        'ht tp://x',
        'http://a\u0000b/',
        '\u{1F600}',
      ]),
      body: 1,
    }),
  '10k-character url': (rng, origin) => json({ url: `${origin}/${'a'.repeat(randomInt(rng, 10_000, 12_000))}`, body: 1 }),
  'url of the wrong type': (rng) => json({ url: pick(rng, [42, 0, null, true, ['http://x/'], { href: 'http://x/' }, '']), body: 1 }),
  'missing body': (rng, origin) => json({ url: `${origin}/no-body`, id: `nb-${word(rng)}` }),
  'headers not an object': (rng, origin) => withHeaders(origin, rng, pick(rng, [['x-a', 'b'], 'x-a: b', 7, null, true])),
  'header value not a string': (rng, origin) => withHeaders(origin, rng, { 'x-a': pick(rng, [{ v: 1 }, 5, null, true, ['a'], {}]) }),
  'invalid header name': (rng, origin) => withHeaders(origin, rng, { [pick(rng, ['x a', 'x:a', '', 'zoë', 'x\r\ny', '(x)', 'x/y'])]: 'v' }),
  'reserved header': (rng, origin) =>
    withHeaders(origin, rng, {
      [pick(rng, [
        'host',
        'Content-Length',
        'content-type',
        'Transfer-Encoding',
        'connection',
        'upgrade',
        'proxy-authorization',
        'webhook-id',
        'X-Callback-Attempt',
      ])]: '1',
    }),
  'header value with CR, LF or NUL': (rng, origin) =>
    withHeaders(origin, rng, { 'x-a': `v${pick(rng, ['\r\nInjected: 1', '\n', '\r', '\u0000'])}` }),
  'header value over 8192 characters': (rng, origin) => withHeaders(origin, rng, { 'x-long': 'v'.repeat(randomInt(rng, 8_193, 20_000)) }),
  'many headers, one reserved': (rng, origin) => {
    const headers: Record<string, string> = {};
    const count = randomInt(rng, 200, 1_000);
    const bad = randomInt(rng, 0, count - 1);
    for (let i = 0; i < count; i += 1) headers[i === bad ? 'webhook-signature' : `x-h-${i}`] = 'v'.repeat(randomInt(rng, 1, 200));
    return withHeaders(origin, rng, headers);
  },
  'method not allowed': (rng, origin) =>
    withField(origin, rng, 'method', pick(rng, ['GET', 'DELETE', 'post', 'HEAD', 'CONNECT', 1, null, ''])),
  'binary noise': (rng) => bytes(rng, randomInt(rng, 1, 2_000)),
  'empty body': () => Buffer.alloc(0),
  'JSON that is not an object': (rng) =>
    Buffer.from(pick(rng, ['[]', '[{"url":"http://127.0.0.1/","body":1}]', '"http://127.0.0.1/"', 'null', '42', 'true', '"{}"', '  '])),
  'unknown field': (rng, origin) =>
    withField(origin, rng, pick(rng, ['extra', 'Url', 'callback', 'delay', 'constructor', 'headers ', '']), 1),
  '__proto__ field': (rng, origin) => Buffer.from(`{"url":"${origin}/p","body":1,"__proto__":{"method":"GET"},"n":"${word(rng)}"}`),
  'invalid id': (rng, origin) =>
    withField(
      origin,
      rng,
      'id',
      pick(rng, [42, { a: 1 }, ['x'], null, true, '', ' padded', 'padded ', 'zoë', 'a'.repeat(257), 'tab\tinside', 'del\u007f', 'nl\nx']),
    ),
  'byte order mark': (rng, origin) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json(base(origin, rng))]),
  'invalid UTF-8 around JSON': (rng, origin) =>
    Buffer.concat([json(base(origin, rng)).subarray(0, 5), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('}')]),
  'nested 100k deep (top level array)': () => Buffer.from(`${'['.repeat(100_000)}${']'.repeat(100_000)}`),
};

/** Too large for MAX_PAYLOAD_BYTES (1 MiB by default): few of these, they are heavy. */
export const oversized = (origin: string): Buffer => json({ url: `${origin}/big`, body: 'x'.repeat(1_100_000) });

/** A bad message of a random kind. */
export function badMessage(rng: Rng, origin: string): RawBody {
  const kinds = Object.keys(BAD);
  const kind = pick(rng, kinds);
  return { kind, content: (BAD[kind] as (rng: Rng, origin: string) => Buffer)(rng, origin) };
}
