import { describe, expect, it } from 'vitest';
import type { ChaosLogEntry } from '../../../chaos/driver.js';
import { idOf } from '../../../chaos/fates.js';
import { faultWindows } from '../../../chaos/fault-window.js';
import type { Attempt, Ledger } from '../../../chaos/ledger.js';
import { dueAt, hasDeliverAt } from '../../../chaos/load.js';
import { orderOf } from '../../../chaos/ordered.js';

const RUN = 'run';
const CALLBACKS = 30;
const DUE = { afterMs: 10_000, spreadMs: 30_000 };

/** A ledger in which every callback's first attempt came `lateMs(n)` after its due time. */
function ledgerOf(lateMs: (n: number) => number): Ledger {
  const byId = new Map<string, Attempt[]>();
  for (let n = 0; n < CALLBACKS; n += 1)
    byId.set(idOf(RUN, n), [{ attempt: 1, status: 200, answered: true, at: dueAt(DUE, 0, n, CALLBACKS) + lateMs(n), tick: n }]);
  return { byId } as unknown as Ledger;
}

// One fault over the whole span in which callbacks fall due.
const FAULT: ChaosLogEntry[] = [{ kind: 'node-fault', label: 'kill', startedS: 10, tookS: 30 }];

describe('a cluster run with ordered keys', () => {
  it('publishes every third callback (the ordered ones) without a deliverAt, the others with one', () => {
    for (let n = 0; n < CALLBACKS; n += 1) expect(hasDeliverAt(n, 5)).toBe(orderOf(n, 5) === undefined);
    expect(hasDeliverAt(1, 5)).toBe(false);
    expect(hasDeliverAt(1, 0)).toBe(true); // --ordered-keys 0: every callback has one
    expect(hasDeliverAt(1, undefined)).toBe(true);
  });

  it('measures lateness after deliverAt over the callbacks that have one only', () => {
    // An ordered callback is published at its would-be due time and attempted later: not a late delivery.
    const ledger = ledgerOf((n) => (hasDeliverAt(n, 5) ? 100 : 60_000));
    const [window] = faultWindows(FAULT, RUN, CALLBACKS, DUE, 0, ledger, 5);
    expect(window?.dueDuring).toBe(20);
    expect(window?.firstAttempts).toBe(20);
    expect(window?.lateMax).toBe(100);
    const [all] = faultWindows(FAULT, RUN, CALLBACKS, DUE, 0, ledger);
    expect(all?.dueDuring).toBe(30);
    expect(all?.lateMax).toBe(60_000);
  });
});
