import { describe, expect, it } from 'vitest';
import { REFRESH_AFTER_RETURNS, needsRefresh, refreshPublishOptions } from '../../../src/dlq/needs-refresh.js';

describe('needsRefresh', () => {
  it('is false until the broker delivery count reaches the threshold, well below the default limit of 20', () => {
    expect(REFRESH_AFTER_RETURNS).toBeLessThan(20);
    expect(needsRefresh(undefined)).toBe(false);
    expect(needsRefresh({})).toBe(false);
    expect(needsRefresh({ 'x-delivery-count': REFRESH_AFTER_RETURNS - 1 })).toBe(false);
    expect(needsRefresh({ 'x-delivery-count': REFRESH_AFTER_RETURNS })).toBe(true);
    expect(needsRefresh({ 'x-delivery-count': 'junk' })).toBe(false);
  });

  it('ignores x-acquired-count, which counts explicit returns that no longer count toward the limit (4.3+)', () => {
    expect(needsRefresh({ 'x-acquired-count': 50, 'x-delivery-count': 1 })).toBe(false);
  });
});

describe('refreshPublishOptions', () => {
  it('copies the message as it was, minus the delivery counters and user-id', () => {
    const headers = {
      'x-callback-reason': 'rejected',
      'x-death': [{ reason: 'delivery_limit' }],
      'x-delivery-count': 12,
      'x-acquired-count': 12,
    };
    const options = refreshPublishOptions({
      headers,
      contentType: 'application/json',
      messageId: 'order-42',
      timestamp: 1_700_000_000,
      appId: 'shop',
      userId: 'someone',
    } as never);
    expect(options).toEqual({
      persistent: true,
      contentType: 'application/json',
      messageId: 'order-42',
      timestamp: 1_700_000_000,
      appId: 'shop',
      headers: { 'x-callback-reason': 'rejected', 'x-death': [{ reason: 'delivery_limit' }] },
    });
    expect(headers['x-delivery-count']).toBe(12);
  });
});
