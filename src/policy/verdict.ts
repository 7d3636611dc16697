import type { DeliveryOutcome } from './classify-outcome.js';
import { decide, type Decision, type RetryPolicy } from './decide.js';
import type { Random } from './jitter.js';
import type { MessagePolicy } from './message-policy.js';
import { delayWithinSchedule } from './retry-schedule.js';
import { failedThroughout, scheduleOf, type CallbackState, type ScheduleRules } from './schedule-end.js';

/** The code an expired callback's last error starts with (`CIRCUIT_OPEN: …`), as `TIMEOUT: …` does a timed-out attempt's. */
export const CIRCUIT_OPEN = 'CIRCUIT_OPEN';

/** What the relay knows about a callback's attempts so far, written into retry and DLQ headers (settle/settle.ts). */
export interface AttemptRecord {
  id: string;
  /** Attempts made, this one included (0 for a message that could not be decoded). */
  attempts: number;
  firstAttemptAt: string | undefined;
  lastAttemptAt: string | undefined;
  lastStatus: number | undefined;
  lastError: string | undefined;
  /** The callback's resolved policy, carried forward in the copy's headers; absent without one. */
  policy?: MessagePolicy | undefined;
  /** How long open circuits held its attempts past their due times, this one included (ms); absent: as the message says. */
  heldMs?: number | undefined;
}

/** What to do with a message after an attempt, and what its headers and reports record. */
export interface Verdict {
  decision: Decision;
  record: AttemptRecord;
}

/** The last error of a callback dead-lettered when its schedule ran out while its circuit was open. */
export const RAN_OUT = `${CIRCUIT_OPEN}: the target failed every request until the retry schedule ended`;

/**
 * The retry policy's decision on an attempt's outcome, and the record a retry or dead-letter copy
 * carries. A callback with a named policy is decided by it, any other by `retry`. Pure: the clock
 * (`nowMs`) and `random` are inputs.
 */
export function verdictOf(
  state: CallbackState,
  outcome: DeliveryOutcome,
  startedAtMs: number,
  retry: RetryPolicy,
  nowMs: number,
  random: Random,
): Verdict {
  const decision = decide(outcome, state.attempt, state.policy?.retry ?? retry, nowMs, random);
  const startedAt = new Date(startedAtMs).toISOString();
  const record: AttemptRecord = {
    id: state.id,
    attempts: state.attempt,
    firstAttemptAt: state.firstAttemptAt ?? startedAt,
    lastAttemptAt: startedAt,
    lastStatus: outcome.status,
    lastError: decision.kind === 'ack' ? undefined : (outcome.error ?? decision.why),
    policy: state.policy,
    // A circuit held this attempt from when it came due until now: its schedule's end comes that much sooner.
    heldMs: heldAfter(state, startedAtMs),
  };
  return { decision, record };
}

/** What circuits have held a callback past its attempts' due times once this attempt started (ms; undefined: never). */
function heldAfter({ heldMs, heldSince }: CallbackState, startedAtMs: number): number | undefined {
  const held = (heldMs ?? 0) + (heldSince === undefined ? 0 : Math.max(0, startedAtMs - heldSince));
  return held > 0 ? held : undefined;
}

/** A failed attempt past the end of its callback's schedule, its target failing throughout: no retry, P.dead as `exhausted`. */
export const ranOutVerdict = ({ record }: Verdict): Verdict => ({
  decision: { kind: 'dead', reason: 'exhausted', why: RAN_OUT },
  record: { ...record, lastError: RAN_OUT },
});

/**
 * The retry of a callback circuits held (`record.heldMs`), decided against its schedule's end, worked
 * out once: its retry would come due after that end, its target failing throughout, so no retry is
 * made (a probe, or an owed request, that failed past it); or, held longer than the rest of its
 * schedule, its retry comes back at that end, not a whole delay after it (delayWithinSchedule):
 * parked then if its target is still failing throughout, as `ISOLATION=off` would park it by then;
 * attempted if not. Any other verdict is left as it is.
 */
export function heldRetry(target: string, state: CallbackState, verdict: Verdict, rules: ScheduleRules, nowMs: number): Verdict {
  const { decision, record } = verdict;
  if (decision.kind !== 'retry' || !record.heldMs) return verdict;
  const { leftMs } = scheduleOf({ ...state, attempt: decision.attempt }, rules);
  if (failedThroughout(target, state, rules, nowMs, nowMs + decision.delayMs + leftMs - record.heldMs, leftMs, decision.attempt))
    return ranOutVerdict(verdict);
  const delayMs = delayWithinSchedule(decision.delayMs, leftMs, record.heldMs);
  return delayMs === decision.delayMs ? verdict : { decision: { ...decision, delayMs }, record };
}
