import { describe, expect, it } from 'vitest';
import { isRelayError } from '../../../src/errors.js';
import { orderedPublish } from '../../../src/producer/ordered-publish.js';
import { orderBucket } from '../../../src/topology/topology-names.js';

const callback = { url: 'https://example.com/hook', body: 1 };

function fieldOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    if (isRelayError(error, 'CR_ERR_INVALID_CALLBACK')) return error.field;
    throw error;
  }
  throw new Error('accepted');
}

describe('orderedPublish', () => {
  it('no orderKey: the lane decides, whatever the delay', () => {
    expect(orderedPublish(callback, { delay: 5_000 }, 5_000)).toBeUndefined();
  });

  it("an orderKey due now: its key's bucket", () => {
    expect(orderedPublish({ ...callback, orderKey: 'foobar' }, {}, 0)).toEqual({ ordered: 40 });
    expect(orderedPublish({ ...callback, orderKey: 'tenant-1' }, { delay: 0 }, 0)).toEqual({ ordered: orderBucket('tenant-1') });
  });

  it('an orderKey with a delay: refused, naming the option given', () => {
    expect(fieldOf(() => orderedPublish({ ...callback, orderKey: 'k' }, { delay: 1 }, 1))).toBe('delay');
    expect(fieldOf(() => orderedPublish({ ...callback, orderKey: 'k' }, { deliverAt: new Date(Date.now() + 60_000) }, 60_000))).toBe(
      'deliverAt',
    );
  });
});
