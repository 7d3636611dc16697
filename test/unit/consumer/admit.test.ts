import { describe, it, expect } from 'vitest';
import { TargetGate, type Admitted, type Lane } from '../../../src/consumer/admit.js';
import type { DeliveryOutcome } from '../../../src/policy/classify-outcome.js';
import { TargetIsolation, type IsolationPolicy } from '../../../src/policy/target-isolation.js';
import { SEED_002_POLICY } from '../_helpers/isolation-policy.js';

/** Two slots per target and a waiting room of three, so every rule shows within a few messages. */
const POLICY: IsolationPolicy = { ...SEED_002_POLICY, perTarget: 2, waitingPerTarget: 3, maxWaiting: 3 };
const T = 'https://hooks.example';
const ok: DeliveryOutcome = { status: 200, durationMs: 5 };
const fail: DeliveryOutcome = { status: 500, durationMs: 5 };

const NORMAL: Admitted = { kind: 'deliver', slot: 'normal' };
const PROBE: Admitted = { kind: 'deliver', slot: 'probe' };
const NO_SLOT: Admitted = { kind: 'deliver', slot: undefined };

const isolation = (overrides: Partial<IsolationPolicy> = {}): TargetIsolation => new TargetIsolation({ ...POLICY, ...overrides });

function degraded(): TargetIsolation {
  const iso = isolation();
  for (let i = 0; i < POLICY.degradeThreshold; i += 1) iso.complete(T, undefined, fail, 0);
  expect(iso.state(T)).toBe('degraded');
  return iso;
}

/** Lets pending promise callbacks run (microtasks only: no timers). */
async function flush(): Promise<void> {
  for (let i = 0; i < 10; i += 1) await Promise.resolve();
}

/** Watches a gate answer: `value` is set once it resolves. */
function watch(answer: Promise<Admitted>): { value: Admitted | undefined } {
  const seen: { value: Admitted | undefined } = { value: undefined };
  void answer.then((value) => {
    seen.value = value;
  });
  return seen;
}

describe('TargetGate without isolation (ISOLATION=off)', () => {
  it.each<Lane>(['main', 'slow'])('always delivers without a slot in the %s lane', async (lane) => {
    const gate = new TargetGate(undefined);
    for (let i = 0; i < 100; i += 1) expect(await gate.admit(T, lane)).toEqual(NO_SLOT);
  });

  it('ignores pump', () => {
    expect(() => new TargetGate(undefined).pump(T)).not.toThrow();
  });
});

describe('TargetGate in the slow lane', () => {
  it('always delivers without a slot, even for a degraded target', async () => {
    const gate = new TargetGate(degraded());
    for (let i = 0; i < 50; i += 1) expect(await gate.admit(T, 'slow')).toEqual(NO_SLOT);
  });

  it('takes no main-lane slot, so the main lane keeps its full cap', async () => {
    const gate = new TargetGate(isolation());
    for (let i = 0; i < 50; i += 1) await gate.admit(T, 'slow');
    expect([await gate.admit(T, 'main'), await gate.admit(T, 'main')]).toEqual([NORMAL, NORMAL]);
  });

  it('takes no probe either: the degraded target still gets its probe in the main lane', async () => {
    const gate = new TargetGate(degraded());
    for (let i = 0; i < 5; i += 1) await gate.admit(T, 'slow');
    expect(await gate.admit(T, 'main')).toEqual(PROBE);
  });

  it('delivers even while the target has an overdue attempt', async () => {
    const iso = isolation();
    iso.overdue(T, 3_000);
    const gate = new TargetGate(iso);
    expect(await gate.admit(T, 'slow')).toEqual(NO_SLOT);
    expect(await gate.admit(T, 'main')).toEqual({ kind: 'divert', why: 'slow' });
  });
});

describe('TargetGate in the main lane', () => {
  it('hands out normal slots up to the cap at once', async () => {
    const gate = new TargetGate(isolation());
    expect([await gate.admit(T, 'main'), await gate.admit(T, 'main')]).toEqual([NORMAL, NORMAL]);
  });

  it('gives a degraded target one probe, then diverts as degraded', async () => {
    const gate = new TargetGate(degraded());
    expect(await gate.admit(T, 'main')).toEqual(PROBE);
    expect(await gate.admit(T, 'main')).toEqual({ kind: 'divert', why: 'degraded' });
  });

  it('parks a message over the cap until pump finds a slot for it', async () => {
    const iso = isolation();
    const gate = new TargetGate(iso);
    await gate.admit(T, 'main');
    await gate.admit(T, 'main');
    const third = watch(gate.admit(T, 'main'));
    await flush();
    expect(third.value).toBeUndefined();
    gate.pump(T); // nothing freed yet: still waiting
    await flush();
    expect(third.value).toBeUndefined();
    iso.complete(T, 'normal', ok, 1);
    gate.pump(T);
    await flush();
    expect(third.value).toEqual(NORMAL);
  });

  it('releases waiting messages first in, first out, one per freed slot', async () => {
    const iso = isolation();
    const gate = new TargetGate(iso);
    await gate.admit(T, 'main');
    await gate.admit(T, 'main');
    const waiting = [watch(gate.admit(T, 'main')), watch(gate.admit(T, 'main')), watch(gate.admit(T, 'main'))];
    iso.complete(T, 'normal', ok, 1);
    gate.pump(T);
    await flush();
    expect(waiting.map((w) => w.value)).toEqual([NORMAL, undefined, undefined]);
    iso.complete(T, 'normal', ok, 2);
    iso.complete(T, 'normal', ok, 3);
    gate.pump(T);
    await flush();
    expect(waiting.map((w) => w.value)).toEqual([NORMAL, NORMAL, NORMAL]);
  });

  it('defers at once when the waiting room is full', async () => {
    const gate = new TargetGate(isolation());
    await gate.admit(T, 'main');
    await gate.admit(T, 'main');
    for (let i = 0; i < POLICY.waitingPerTarget; i += 1) void gate.admit(T, 'main');
    expect(await gate.admit(T, 'main')).toEqual({ kind: 'defer', why: 'over-cap' });
  });

  it('moves waiting messages on when their target turns degraded: one probe, the rest diverted', async () => {
    const iso = isolation();
    const gate = new TargetGate(iso);
    await gate.admit(T, 'main');
    await gate.admit(T, 'main');
    const waiting = [watch(gate.admit(T, 'main')), watch(gate.admit(T, 'main')), watch(gate.admit(T, 'main'))];
    for (let i = 0; i < POLICY.degradeThreshold; i += 1) iso.complete(T, undefined, fail, 0);
    gate.pump(T);
    await flush();
    expect(waiting.map((w) => w.value)).toEqual([PROBE, { kind: 'divert', why: 'degraded' }, { kind: 'divert', why: 'degraded' }]);
  });

  it('moves waiting messages to the slow lane once an attempt of their target is overdue', async () => {
    const iso = isolation();
    const gate = new TargetGate(iso);
    await gate.admit(T, 'main');
    await gate.admit(T, 'main');
    const waiting = [watch(gate.admit(T, 'main')), watch(gate.admit(T, 'main'))];
    iso.overdue(T, 3_000);
    gate.pump(T);
    await flush();
    expect(waiting.map((w) => w.value)).toEqual([
      { kind: 'divert', why: 'slow' },
      { kind: 'divert', why: 'slow' },
    ]);
  });

  it('keeps targets apart: pumping one leaves the other waiting', async () => {
    const iso = isolation({ perTarget: 1 });
    const gate = new TargetGate(iso);
    const other = 'https://other.example';
    await gate.admit(T, 'main');
    await gate.admit(other, 'main');
    const mine = watch(gate.admit(T, 'main'));
    const theirs = watch(gate.admit(other, 'main'));
    iso.complete(T, 'normal', ok, 1);
    iso.complete(other, 'normal', ok, 1);
    gate.pump(T);
    await flush();
    expect([mine.value, theirs.value]).toEqual([NORMAL, undefined]);
    gate.pump(other);
    await flush();
    expect(theirs.value).toEqual(NORMAL);
  });

  it('pumping a target with nobody waiting changes nothing', async () => {
    const iso = isolation({ perTarget: 1, waitingPerTarget: 1, maxWaiting: 1 });
    const gate = new TargetGate(iso);
    gate.pump(T);
    expect(await gate.admit(T, 'main')).toEqual(NORMAL);
    const parked = watch(gate.admit(T, 'main'));
    await flush();
    expect(parked.value).toBeUndefined();
    expect(await gate.admit(T, 'main')).toEqual({ kind: 'defer', why: 'over-cap' });
  });
});
