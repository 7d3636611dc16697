import type { ChaosLogEntry } from './driver.js';
import { idOf } from './fates.js';
import type { Ledger } from './ledger.js';
import { dueAt, hasDeliverAt, type DueSchedule } from './load.js';

/** What one node fault did to the callbacks that fell due while it lasted. */
export interface FaultWindow {
  label: string;
  /** Seconds after the start of publishing: the fault's first blow, and the cluster whole again. */
  fromS: number;
  toS: number;
  /** Scheduled callbacks whose `deliverAt` fell inside the window (ordered ones have none), and how many of those reached the receiver. */
  dueDuring: number;
  firstAttempts: number;
  /** How late their first attempts were after `deliverAt`, in ms. */
  lateP50: number;
  lateP99: number;
  lateMax: number;
  /** First attempts more than 50 ms before `deliverAt`: must be 0. */
  early: number;
  /**
   * Callbacks answered 2xx more than once whose second 2xx came after this fault began and before the
   * next one did: the duplicates this fault's redeliveries made (delivery is at least once).
   */
  duplicates: number;
  /** 2xx answers written back per second: during the fault, and over the same span just before it. */
  ratePerSecBefore: number;
  ratePerSecDuring: number;
}

/** Answers 2xx written back to a worker with `from <= at < to`. */
function deliveriesBetween(ledger: Ledger, from: number, to: number): number {
  let n = 0;
  for (const attempts of ledger.byId.values())
    for (const a of attempts) if (a.answered && a.status >= 200 && a.status < 300 && a.at >= from && a.at < to) n += 1;
  return n;
}

/** For each callback answered 2xx more than once, when its second 2xx answer went out. */
function secondDeliveryTimes(ledger: Ledger): number[] {
  const times: number[] = [];
  for (const attempts of ledger.byId.values()) {
    const ok = attempts
      .filter((a) => a.answered && a.status >= 200 && a.status < 300)
      .map((a) => a.at)
      .sort((a, b) => a - b);
    if (ok.length > 1) times.push(ok[1]!);
  }
  return times;
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;

/**
 * One window per node-fault act of the chaos log. The "before" span has the fault's own length (at
 * most 30 s, and none before the first callback was due) and ends at its first blow; with callbacks falling due at a steady pace, both rates
 * measure whether the fleet keeps up with what falls due.
 */
export function faultWindows(
  chaos: ChaosLogEntry[],
  run: string,
  callbacks: number,
  due: DueSchedule,
  startedAt: number,
  ledger: Ledger,
  orderedKeys?: number,
): FaultWindow[] {
  const windows: FaultWindow[] = [];
  const faults = chaos.filter((entry) => entry.kind === 'node-fault');
  const secondDeliveries = secondDeliveryTimes(ledger);
  for (const [i, act] of faults.entries()) {
    const next = faults[i + 1];
    const until = next ? startedAt + next.startedS * 1000 : Number.POSITIVE_INFINITY;
    const from = startedAt + act.startedS * 1000;
    const to = from + act.tookS * 1000;
    const late: number[] = [];
    let dueDuring = 0;
    for (let n = 0; n < callbacks; n += 1) {
      const at = dueAt(due, startedAt, n, callbacks);
      if (at < from || at >= to || !hasDeliverAt(n, orderedKeys)) continue;
      dueDuring += 1;
      const first = ledger.byId.get(idOf(run, n))?.find((attempt) => attempt.attempt === 1);
      if (first) late.push(first.at - at);
    }
    late.sort((a, b) => a - b);
    const span = Math.max(1, to - from);
    // Only while callbacks were falling due: before the first is due, the fleet has nothing to deliver.
    const before = Math.min(span, 30_000, from - (startedAt + due.afterMs));
    windows.push({
      label: act.label,
      fromS: act.startedS,
      toS: Math.round((act.startedS + act.tookS) * 10) / 10,
      dueDuring,
      firstAttempts: late.length,
      lateP50: percentile(late, 50),
      lateP99: percentile(late, 99),
      lateMax: late.at(-1) ?? Number.NaN,
      early: late.filter((ms) => ms < -50).length,
      duplicates: secondDeliveries.filter((t) => t >= from && t < until).length,
      ratePerSecBefore: before >= 5_000 ? Math.round((deliveriesBetween(ledger, from - before, from) / before) * 10_000) / 10 : Number.NaN,
      ratePerSecDuring: Math.round((deliveriesBetween(ledger, from, to) / span) * 10_000) / 10,
    });
  }
  return windows;
}

/** The faults' table, as the run prints it. */
export function formatFaultWindows(windows: FaultWindow[]): string[] {
  if (windows.length === 0) return [];
  const lines = [
    '',
    'fault windows (callbacks due during each fault: first-attempt lateness; 2xx deliveries a second during the fault vs the span before it):',
  ];
  for (const w of windows) {
    lines.push(
      `  ${w.label}\n    t=${w.fromS}–${w.toS} s: ${w.dueDuring} due, ${w.firstAttempts} attempted; late p50 ${w.lateP50} ms, p99 ${w.lateP99} ms, max ${w.lateMax} ms; ` +
        `${w.early} early; ${w.duplicates} delivered twice; delivered ${w.ratePerSecDuring}/s during vs ${w.ratePerSecBefore}/s before`,
    );
  }
  return lines;
}
