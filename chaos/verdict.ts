import { expectedOf, FATES, fateOf, idOf, successAttempt, successCertain, type Fate } from './fates.js';
import type { Attempt } from './ledger.js';
import type { DeadEntry } from './queues.js';
import { judgeOrder } from './ordered.js';
import type { OrderVerdict } from './order-check.js';
import { CIRCUIT_OPEN } from '../src/reports.js';

export interface FateRow {
  callbacks: number;
  delivered: number;
  /** Parked in P.dead with the reason the fate implies. */
  deadAsExpected: number;
  /** Parked in P.dead although the script answers 2xx within MAX_ATTEMPTS: a failure of the run. */
  undelivered: number;
  /** Ended otherwise than the fate implies, where that is no failure (a `4xx` parked as `exhausted`, say). */
  otherOutcome: number;
  lost: number;
  /** Ids answered 2xx more than once. */
  duplicateDeliveries: number;
  /** Requests beyond one per distinct attempt number: re-sent attempts after a kill, cut or restart. */
  repeatedAttempts: number;
}

/** A tally with nothing counted yet: each fate's row starts so, and so does the sum of the rows (report.ts). */
export const emptyTally = (): FateRow => ({
  callbacks: 0,
  delivered: 0,
  deadAsExpected: 0,
  undelivered: 0,
  otherOutcome: 0,
  lost: 0,
  duplicateDeliveries: 0,
  repeatedAttempts: 0,
});

export interface Verdict {
  callbacks: number;
  delivered: number;
  dead: Record<string, number>;
  lost: number;
  lostIds: string[];
  /** Never confirmed to the producer and never seen again: refused, not lost. */
  unconfirmedAndUnseen: number;
  duplicates: { deliveredTwice: number; parkedTwice: number; deliveredAndParked: number; afterRepublish: number };
  repeatedAttempts: number;
  /** Requests scripted 2xx whose answer never went out (the worker was killed or cut off first). */
  unansweredSuccesses: number;
  /**
   * Callbacks whose success was certain by their schedule (successCertain) but that ended in P.dead:
   * `reachedSuccess` says whether the attempt scripted to succeed ever reached the receiver (false: the
   * attempts were spent without that request, e.g. failed fast by an open circuit).
   */
  undelivered: { id: string; got: string; reachedSuccess: boolean }[];
  otherOutcomes: { id: string; expected: string; got: string }[];
  /** `--cancel`: cancelled callbacks parked as `canceled` (the others ended before the cancel was read). */
  canceled: number;
  violations: { id: string; problem: string }[];
  perFate: Record<Fate, FateRow>;
  /** With ordered keys: whether any callback of a key was attempted before an earlier one of its key was settled (order-check.ts). */
  order?: OrderVerdict;
}

export interface VerdictInput {
  run: string;
  callbacks: number;
  byId: Map<string, Attempt[]>;
  dead: DeadEntry[];
  republishedIds: Set<string>;
  unconfirmed: string[];
  maxAttempts: number;
  /** Delays before attempts 2, 3, … in ms, and the jitter fraction. */
  schedule: number[];
  jitter: number;
  /** Both modes keep milliseconds: queues mode's worker holds a callback the levels let out early (docs/delay-modes.md). */
  mode: 'queues' | 'plugin';
  /** `--cancel`: ids cancelled mid-retry; parked as `canceled`, or as their fate implies when the cancel came too late. */
  cancelled?: Set<string>;
  /** Ordered keys in the run (ordered.ts): their order is checked too. */
  orderedKeys?: number | undefined;
  /** `--cancel`: when each cancel was first sent (ledger ticks), for the order check. */
  cancelTicks?: Map<string, number>;
}

const SLACK_MS = 200;
const EXAMPLES = 20;

/** The earliest moment, after attempt `failed`, that attempt `failed + 1` may start. */
function minGapMs(input: VerdictInput, failed: number): number {
  const delay = input.schedule[Math.min(failed, input.schedule.length) - 1] ?? 0;
  const low = delay * (1 - input.jitter);
  return low - SLACK_MS;
}

/** Checks every callback against its fate: delivered or parked as implied, never lost, attempts by the schedule. */
export function judge(input: VerdictInput): Verdict {
  const deadById = new Map<string, DeadEntry[]>();
  for (const entry of input.dead) deadById.set(entry.id, [...(deadById.get(entry.id) ?? []), entry]);
  const unconfirmed = new Set(input.unconfirmed);
  const perFate = Object.fromEntries((Object.keys(FATES) as Fate[]).map((fate) => [fate, emptyTally()])) as Record<Fate, FateRow>;
  const verdict: Verdict = {
    callbacks: input.callbacks,
    delivered: 0,
    dead: {},
    lost: 0,
    lostIds: [],
    unconfirmedAndUnseen: 0,
    duplicates: { deliveredTwice: 0, parkedTwice: 0, deliveredAndParked: 0, afterRepublish: 0 },
    repeatedAttempts: 0,
    unansweredSuccesses: 0,
    undelivered: [],
    otherOutcomes: [],
    canceled: 0,
    violations: [],
    perFate,
  };
  const violate = (id: string, problem: string): void => void verdict.violations.push({ id, problem });
  for (const entry of input.dead) verdict.dead[entry.reason] = (verdict.dead[entry.reason] ?? 0) + 1;

  for (let n = 0; n < input.callbacks; n += 1) {
    const id = idOf(input.run, n);
    const fate = fateOf(n);
    const row = perFate[fate];
    row.callbacks += 1;
    const attempts = input.byId.get(id) ?? [];
    const parked = deadById.get(id) ?? [];
    verdict.unansweredSuccesses += attempts.filter((a) => !a.answered && a.status >= 200 && a.status < 300).length;
    // Delivered = a 2xx actually written back; one meant for a killed worker does not count.
    const successes = attempts.filter((a) => a.answered && a.status >= 200 && a.status < 300);
    if (successes.length === 0 && parked.length === 0) {
      if (unconfirmed.has(id) && attempts.length === 0) {
        verdict.unconfirmedAndUnseen += 1;
        continue;
      }
      verdict.lost += 1;
      row.lost += 1;
      if (verdict.lostIds.length < EXAMPLES) verdict.lostIds.push(id);
      continue;
    }
    if (successes.length > 0) verdict.delivered += 1;
    if (successes.length > 1) {
      verdict.duplicates.deliveredTwice += 1;
      row.duplicateDeliveries += 1;
      if (input.republishedIds.has(id)) verdict.duplicates.afterRepublish += 1;
    }
    if (parked.length > 1) verdict.duplicates.parkedTwice += 1;
    if (successes.length > 0 && parked.length > 0) verdict.duplicates.deliveredAndParked += 1;

    const expected = expectedOf(fate);
    const got = successes.length > 0 ? 'delivered' : `dead:${parked[0]!.reason}`;
    const want = expected.kind === 'delivered' ? 'delivered' : `dead:${expected.reason}`;
    if (got === 'dead:canceled' && input.cancelled?.has(id)) verdict.canceled += 1;
    if (got === want || (got === 'dead:canceled' && input.cancelled?.has(id))) {
      if (expected.kind === 'delivered') row.delivered += 1;
      else row.deadAsExpected += 1;
    } else if (successCertain(fate, input.maxAttempts) && successes.length === 0) {
      row.undelivered += 1;
      const entry = parked[0];
      const detail = entry ? ` after ${entry.attempts ?? '?'} attempts, last error ${entry.lastError ?? 'none'}` : '';
      verdict.undelivered.push({ id, got: `${got}${detail}`, reachedSuccess: attempts.some((a) => a.attempt >= successAttempt(fate)) });
    } else {
      row.otherOutcome += 1;
      verdict.otherOutcomes.push({ id, expected: want, got });
    }

    // Attempt numbers: within 1..MAX_ATTEMPTS, never more distinct ones than allowed.
    const numbers = new Set(attempts.map((a) => a.attempt));
    const repeated = attempts.length - numbers.size;
    row.repeatedAttempts += repeated;
    verdict.repeatedAttempts += repeated;
    for (const k of numbers) {
      if (!Number.isInteger(k) || k < 1 || k > input.maxAttempts) violate(id, `x-callback-attempt ${k} outside 1..${input.maxAttempts}`);
    }
    if (attempts.length > input.maxAttempts + repeated) violate(id, `${attempts.length} requests, more than MAX_ATTEMPTS + repeats`);
    // Retry timing: the first request of attempt k+1 no earlier than the schedule allows after attempt k.
    for (const k of numbers) {
      const first = attempts.find((a) => a.attempt === k + 1);
      const previous = attempts.find((a) => a.attempt === k);
      if (first && previous && first.at - previous.at < minGapMs(input, k)) {
        violate(
          id,
          `attempt ${k + 1} came ${first.at - previous.at} ms after attempt ${k}; the schedule allows ≥ ${minGapMs(input, k) + SLACK_MS} ms`,
        );
      }
    }
    // Parked copies must carry the attempt count their reason implies.
    for (const entry of parked) {
      // Fewer only when its target's circuit stayed open to the end of its schedule (isolation.md#schedule-keeps-its-time).
      const expired = entry.lastError?.split(':')[0] === CIRCUIT_OPEN && (entry.attempts ?? 0) < input.maxAttempts;
      if (entry.reason === 'exhausted' && entry.attempts !== input.maxAttempts && !expired)
        violate(id, `parked exhausted with x-callback-attempts ${entry.attempts}, not ${input.maxAttempts}`);
      if (entry.reason === 'rejected' && fate === '4xx' && entry.attempts !== 1)
        violate(id, `parked rejected with x-callback-attempts ${entry.attempts}, not 1`);
    }
    if (successes.length > 0 && fate !== 'ok' && successes[0]!.attempt < successAttempt(fate))
      violate(id, `answered 2xx at attempt ${successes[0]!.attempt}`);
  }
  if (input.orderedKeys)
    verdict.order = judgeOrder({
      run: input.run,
      callbacks: input.callbacks,
      keys: input.orderedKeys,
      byId: input.byId,
      dead: input.dead,
      cancelTicks: input.cancelTicks,
      unconfirmed: input.unconfirmed,
      maxAttempts: input.maxAttempts,
    });
  return verdict;
}
