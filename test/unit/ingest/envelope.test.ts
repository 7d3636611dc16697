import { describe, expect, it } from 'vitest';
import { isRelayError } from '../../../src/errors.js';
import { checkPublishJob, idempotencyKey, toPublishJob, type Envelope } from '../../../src/ingest/envelope.js';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const URL_ = 'https://example.com/hook';

function fieldOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    if (isRelayError(error, 'CR_ERR_INVALID_CALLBACK')) return error.field;
    throw error;
  }
  throw new Error('accepted');
}

describe('toPublishJob, checkPublishJob', () => {
  it('keeps the envelope id, else takes the fallback id', () => {
    expect(toPublishJob({ id: 'own', url: URL_, body: 1 }, 'key').callback.id).toBe('own');
    expect(toPublishJob({ url: URL_, body: null }, 'key')).toEqual({ callback: { url: URL_, body: null, id: 'key' }, options: {} });
  });

  it('takes delay as ms or a duration, and deliverAt as a date-time', () => {
    expect(toPublishJob({ url: URL_, body: 1, delay: 1500 }, 'k').options).toEqual({ delay: 1500 });
    expect(toPublishJob({ url: URL_, body: 1, delay: '5m' }, 'k').options).toEqual({ delay: 300_000 });
    expect(toPublishJob({ url: URL_, body: 1, deliverAt: '2030-01-01T00:01:00Z' }, 'k').options).toEqual({
      deliverAt: new Date(NOW + 60_000),
    });
  });

  it('carries an orderKey into the callback; an ordered one may be due now (no delay, 0, or a deliverAt past)', () => {
    expect(toPublishJob({ url: URL_, body: 1, orderKey: 'tenant-7' }, 'k')).toEqual({
      callback: { url: URL_, body: 1, orderKey: 'tenant-7', id: 'k' },
      options: {},
    });
    for (const when of [{}, { delay: 0 }, { deliverAt: '2029-12-31T23:59:00Z' }]) {
      const job = toPublishJob({ url: URL_, body: 1, orderKey: 'tenant-7', ...when }, 'k');
      expect(checkPublishJob(job, NOW, 1_000)).toBe(job);
    }
  });

  it('refuses what publish() would refuse, naming the field', () => {
    const cases: [Partial<Envelope>, string][] = [
      [{ url: 'ftp://example.com/' }, 'url'],
      [{ headers: { 'webhook-id': 'x' } }, 'headers.webhook-id'],
      [{ delay: 'soon' }, 'delay'],
      [{ delay: 1, deliverAt: '2030-01-01T00:01:00Z' }, 'delay'],
      [{ deliverAt: 'not a date' }, 'deliverAt'],
      [{ delay: '2000h' }, 'delay'],
      [{ body: 'x'.repeat(200) }, 'body'],
      [{ orderKey: ' padded' }, 'orderKey'],
      [{ orderKey: 'k', delay: '1s' }, 'delay'],
      [{ orderKey: 'k', deliverAt: '2030-01-01T00:01:00Z' }, 'deliverAt'],
    ];
    for (const [change, field] of cases) {
      expect(
        fieldOf(() => checkPublishJob(toPublishJob({ url: URL_, body: 1, ...change } as Envelope, 'k'), NOW, 150)),
        JSON.stringify(change),
      ).toBe(field);
    }
  });
});

describe('idempotencyKey', () => {
  it('is absent or a valid callback id', () => {
    expect(idempotencyKey(undefined)).toBeUndefined();
    expect(idempotencyKey('order-42')).toBe('order-42');
    expect(fieldOf(() => idempotencyKey(' padded'))).toBe('Idempotency-Key');
    expect(fieldOf(() => idempotencyKey(['a', 'b']))).toBe('Idempotency-Key');
  });
});
