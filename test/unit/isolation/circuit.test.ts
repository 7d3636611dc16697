import { describe, it, expect } from 'vitest';
import { Circuit, type CircuitPolicy } from '../../../src/isolation/circuit.js';
import { FairShare } from '../../../src/isolation/fair-share.js';
import type { Waiting } from '../../../src/isolation/scheduler.js';

const POLICY: CircuitPolicy = {
  window: 20,
  degradeThreshold: 2,
  recoverThreshold: 1,
  quietPeriodMs: 30_000,
  maxTargets: 100,
  probesPerTarget: 1,
  maxProbes: 2,
};
const SLOTS = { capacity: 10, perTarget: 10, initialPerTarget: 2, maxTargets: 100 };
const ENDED = { slow: false, succeeded: true, wasOverdue: false, attempt: undefined };

/** A circuit over its own fair share; `requeued`: what it queued again as a probe. */
function setup() {
  const share = new FairShare<Waiting<number>>(SLOTS);
  const requeued: Array<Waiting<number>> = [];
  const circuit = new Circuit<number>(POLICY, 0, share, {
    requeue: (target, waiting) => {
      requeued.push(waiting);
      share.push(target, waiting);
    },
  });
  const wait = (target: string, item: number, at = 0) => share.push(target, { item, kind: 'attempt', at, source: 'lane' });
  return { share, circuit, requeued, wait };
}

describe('Circuit: probes, early counts and owed requests of open circuits', () => {
  it('gives each target probesPerTarget probe places and all of them maxProbes; a released one is free again', () => {
    const { circuit } = setup();
    expect(circuit.takeProbe('a')).toBe(true);
    expect(circuit.takeProbe('a')).toBe(false);
    expect(circuit.takeProbe('b')).toBe(true);
    expect(circuit.takeProbe('c')).toBe(false);
    circuit.released('a', 'attempt');
    expect(circuit.takeProbe('c')).toBe(false);
    circuit.released('a', 'probe');
    expect(circuit.takeProbe('c')).toBe(true);
  });

  it('a probe past the slow threshold makes room for the next, and its end frees no fresh place', () => {
    const { circuit } = setup();
    circuit.takeProbe('a');
    circuit.overdue('a', 1_000, 'probe');
    expect(circuit.takeProbe('a')).toBe(true);
    circuit.ended('a', 'probe', 2_000, { ...ENDED, slow: true, succeeded: false, wasOverdue: true });
    expect(circuit.takeProbe('a')).toBe(false);
  });

  it('overdue attempts open the circuit early and hand back what waits but for its oldest, kept as the first probe', () => {
    const { circuit, requeued, wait, share } = setup();
    for (const item of [1, 2, 3]) wait('t', item);
    expect(circuit.overdue('t', 1_000, 'attempt').transition).toBeUndefined();
    const opened = circuit.overdue('t', 1_000, 'attempt');
    expect(opened.transition).toMatchObject({ from: 'healthy', to: 'degraded' });
    expect(opened.circuitOpen).toEqual([2, 3]);
    expect(requeued).toEqual([{ item: 1, kind: 'probe', at: 0, source: 'lane' }]);
    expect(share.waiting('t')).toBe(1);
    expect(circuit.isOpen('t')).toBe(true);
  });

  it('an overdue attempt that succeeds after all is amended, not counted twice, and closes the circuit', () => {
    const { circuit } = setup();
    circuit.overdue('t', 1_000, 'attempt');
    circuit.overdue('t', 1_000, 'attempt');
    expect(circuit.isOpen('t')).toBe(true);
    const closed = circuit.ended('t', 'attempt', 2_000, { ...ENDED, slow: true, wasOverdue: true });
    expect(closed.transition).toMatchObject({ from: 'degraded', to: 'healthy' });
  });

  it('an attempt overdue while its target succeeded lately counts only when it ends', () => {
    const { circuit } = setup();
    circuit.ended('t', 'attempt', 0, ENDED);
    circuit.overdue('t', 1_000, 'attempt');
    circuit.overdue('t', 1_000, 'attempt');
    expect(circuit.isOpen('t')).toBe(false);
  });

  it('an owed request waits while its target holds fewer than its limit; one asking about an unanswered attempt number waits at once, one at a time', () => {
    const { circuit, wait } = setup();
    const notOwed = { owed: false, forced: false, mayBorrow: false };
    expect(circuit.owedMayWait('t', 0, { ...notOwed, owed: true })).toBe(true);
    wait('t', 1);
    wait('t', 2);
    expect(circuit.owedMayWait('t', 0, { ...notOwed, owed: true })).toBe(false);
    expect(circuit.owedMayWait('t', 0, { ...notOwed, forced: true })).toBe(true);
    expect(circuit.owedMayWait('t', 0, notOwed, 3)).toBe(true);
    expect(circuit.owedMayWait('t', 10, notOwed, 3)).toBe(false);
    // Its answer is in health now: nothing more to ask at that attempt number.
    circuit.ended('t', 'attempt', 20, { ...ENDED, succeeded: false, attempt: 3 });
    expect(circuit.owedMayWait('t', 30, notOwed, 3)).toBe(false);
    expect(circuit.owedMayWait('t', 30, notOwed, 4)).toBe(true);
  });

  it('takes an ask that never ended as gone after a minute', () => {
    const { circuit } = setup();
    const notOwed = { owed: false, forced: false, mayBorrow: false };
    expect(circuit.owedMayWait('t', 0, notOwed, 2)).toBe(true);
    circuit.sweep(59_999);
    expect(circuit.owedMayWait('t', 59_999, notOwed, 2)).toBe(false);
    circuit.sweep(60_000);
    expect(circuit.owedMayWait('t', 60_000, notOwed, 2)).toBe(true);
  });

  it("another worker's transition is taken as its own", () => {
    const { circuit, wait } = setup();
    wait('t', 1);
    wait('t', 2);
    const forced = circuit.shared('t', 'degraded', 0);
    expect(forced.transition).toMatchObject({ to: 'degraded', shared: true });
    expect(forced.circuitOpen).toEqual([2]);
    expect(circuit.shared('t', 'healthy', 10).transition).toMatchObject({ to: 'healthy' });
  });
});
