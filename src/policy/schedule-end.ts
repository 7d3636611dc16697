import type { RetryPolicy } from './decide.js';
import type { MessagePolicy, PolicyDefaults } from './message-policy.js';
import { scheduleLeftMs, type AttemptRange, type ScheduleLeft } from './retry-schedule.js';

/*
 * When a callback that open circuits held has run out of schedule. Pure: the time is an input, and
 * what the scheduler saw of a target's failures is asked through `ScheduleRules.failedThroughout`.
 */

/** What these rules read of a decoded callback: its retry state, as its headers carried it (consumer/decode.ts). */
export interface CallbackState {
  id: string;
  /** The number of the attempt about to be made (1-based). */
  attempt: number;
  /** ISO time of attempt 1, when there was one. */
  firstAttemptAt: string | undefined;
  /** Deferred by an open circuit: when this attempt first came due (ms since the epoch). */
  heldSince?: number | undefined;
  /** How long open circuits held its earlier attempts past their due times (ms, `x-callback-held-ms`); absent: never. */
  heldMs?: number | undefined;
  /** The callback's named policy, resolved; `undefined` (no policy): the worker's own settings. */
  policy?: MessagePolicy | undefined;
}

/**
 * The worker's own retry policy and attempt timeout (what a callback without a named policy follows),
 * and the scheduler's view of a target's failures (`Scheduler.failedThroughout`; absent with
 * `ISOLATION=off`, which watches no target).
 */
export interface ScheduleRules extends PolicyDefaults {
  failedThroughout?: ((target: string, sinceMs: number, failedAfterMs: number, attempts: AttemptRange) => boolean) | undefined;
}

/** A callback with a named policy follows it; any other, the worker's defaults. */
export const timeoutOf = (state: CallbackState, rules: PolicyDefaults): number => state.policy?.timeoutMs ?? rules.timeoutMs;
export const retryOf = (state: CallbackState, rules: PolicyDefaults): RetryPolicy => state.policy?.retry ?? rules.retry;

/** What is left of a callback's schedule from its attempt about to be made, and what circuits held it so far. */
export function scheduleOf(state: CallbackState, rules: PolicyDefaults): ScheduleLeft {
  const retry = retryOf(state, rules);
  return { leftMs: scheduleLeftMs(retry.schedule, retry.maxAttempts, state.attempt, timeoutOf(state, rules)), heldMs: state.heldMs ?? 0 };
}

/**
 * Whether the schedule ending at `endsAt` (`leftMs` after its attempt came due, less what circuits held
 * it) ran out with its target failing throughout: the target must have answered no request since the
 * remaining attempts would have begun with `ISOLATION=off` (a receiver's answer may depend on the
 * callback: a retry that finds its work done answers at once where the first attempt hung), failed
 * one when its last attempt would have been made, a timeout before the end, and failed the latest
 * request it got at each attempt number the callback has left (an answer may depend on the attempt:
 * a receiver whose first attempts hang and whose second ones succeed is not failing at attempt 2).
 */
export function failedThroughout(
  target: string,
  state: CallbackState,
  rules: ScheduleRules,
  nowMs: number,
  endsAt: number,
  leftMs: number,
  fromAttempt = state.attempt,
): boolean {
  const attempts = { from: fromAttempt, to: retryOf(state, rules).maxAttempts };
  return (
    nowMs >= endsAt &&
    rules.failedThroughout !== undefined &&
    rules.failedThroughout(target, endsAt - leftMs, endsAt - timeoutOf(state, rules), attempts)
  );
}

/**
 * A callback a circuit held (now, or at earlier attempts) whose schedule ran out with its target
 * failing throughout (`failedThroughout`), its attempt due now. Asked before a callback is offered, so
 * that an open circuit does not make it a probe past its end. One never held has its whole rest ahead.
 */
export function ranOut(target: string, state: CallbackState, rules: ScheduleRules, nowMs: number): boolean {
  if (!rules.failedThroughout || (state.heldSince === undefined && !state.heldMs)) return false;
  const { leftMs, heldMs } = scheduleOf(state, rules);
  return failedThroughout(target, state, rules, nowMs, Math.min(state.heldSince ?? nowMs, nowMs) + leftMs - heldMs, leftMs);
}
