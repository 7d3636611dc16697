import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AMQP_HEADER_TABLE_LIMIT, headerTableSize } from '../../../src/message/header-table-size.js';

// amqplib's own encoder: the size estimate must never be below what it writes. Not an exported
// entry point of amqplib 2, so it is loaded by its file path.
const require = createRequire(import.meta.url);
const codec = require(join(dirname(require.resolve('amqplib')), 'lib', 'codec.js')) as {
  encodeTable(buffer: Buffer, value: unknown, offset: number): number;
};
const encoded = (headers: Record<string, unknown>): number => codec.encodeTable(Buffer.alloc(1 << 20), headers, 0);

describe('headerTableSize', () => {
  it.each<[string, Record<string, unknown>]>([
    ['empty', {}],
    ['strings, ASCII and not', { a: 'x', 'x-callback-last-error': 'é'.repeat(100), ключ: 'значение' }],
    ['small integers', { byte: 5, short: 1_000, int: 100_000, long: 2 ** 40, negative: -3 }],
    ['floats and booleans', { pi: 3.14, yes: true, no: false }],
    ['null, buffers, arrays, nested tables', { n: null, b: Buffer.from('abc'), a: [1, 'two', [3]], t: { inner: { deeper: 'x' } } }],
    ['typed values', { ts: { '!': 'timestamp', value: 1_700_000_000 }, i: { '!': 'int32', value: 7 } }],
    [
      'x-death as the broker sends it',
      {
        'x-death': [
          {
            count: 1,
            reason: 'expired',
            queue: 'p.delay.00',
            time: { '!': 'timestamp', value: 1 },
            exchange: '',
            'routing-keys': ['p.delay.00'],
          },
        ],
      },
    ],
  ])('is at least the encoded size: %s', (_label, headers) => {
    const size = headerTableSize(headers);
    expect(size).toBeGreaterThanOrEqual(encoded(headers));
    expect(size - encoded(headers)).toBeLessThanOrEqual(64);
  });

  it('is exact for string headers', () => {
    const headers = { a: 'x'.repeat(1_000), b: 'ü'.repeat(10) };
    expect(headerTableSize(headers)).toBe(encoded(headers));
  });

  it('skips undefined values, as amqplib does', () => {
    expect(headerTableSize({ gone: undefined })).toBe(4);
    expect(headerTableSize(undefined)).toBe(4);
  });

  it('sees a table over the encoder limit', () => {
    expect(headerTableSize({ big: 'x'.repeat(AMQP_HEADER_TABLE_LIMIT) })).toBeGreaterThan(AMQP_HEADER_TABLE_LIMIT);
  });
});
