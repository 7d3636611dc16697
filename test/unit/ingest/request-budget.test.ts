import { describe, expect, it } from 'vitest';
import { createRequestBudget, requestCharge } from '../../../src/ingest/request-budget.js';

describe('request budget', () => {
  it('takes bytes up to the bound and no further; gives them back', () => {
    const budget = createRequestBudget(100);
    expect(budget.take(60)).toBe(true);
    expect(budget.take(41)).toBe(false);
    expect(budget.inUse()).toBe(60);
    expect(budget.take(40)).toBe(true);
    budget.give(60);
    expect([budget.inUse(), budget.take(60), budget.take(1)]).toEqual([40, true, false]);
  });

  it('charges the Content-Length, else (chunked, malformed) the route limit, never more than it', () => {
    expect(requestCharge('1234', 5_000)).toBe(1_234);
    expect(requestCharge(undefined, 5_000)).toBe(5_000);
    expect(requestCharge('12x', 5_000)).toBe(5_000);
    expect(requestCharge('999999', 5_000)).toBe(5_000);
  });
});
