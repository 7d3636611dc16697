/**
 * The delay before the attempt that follows `failedAttempt` (1-based). Entry i of the schedule is the
 * delay before attempt i + 2; past its end the last entry repeats, so MAX_ATTEMPTS may exceed it.
 */
export function scheduledDelay(schedule: readonly number[], failedAttempt: number): number {
  if (schedule.length === 0) throw new RangeError('retry schedule is empty');
  if (!Number.isInteger(failedAttempt) || failedAttempt < 1) throw new RangeError(`attempt must be ≥ 1, got ${failedAttempt}`);
  return schedule[Math.min(failedAttempt, schedule.length) - 1] as number;
}

/** Whether another attempt may follow `failedAttempt` when `maxAttempts` are allowed in all. */
export const hasAttemptsLeft = (failedAttempt: number, maxAttempts: number): boolean => failedAttempt < maxAttempts;

/**
 * How long the rest of a callback's schedule lasts from the moment its attempt `attempt` comes due, if
 * every attempt from there takes its whole `attemptTimeoutMs` and fails: after that long a receiver that
 * never answers has it dead-lettered as exhausted. Delays count as scheduled (jitter spreads them evenly
 * around that).
 */
export function scheduleLeftMs(schedule: readonly number[], maxAttempts: number, attempt: number, attemptTimeoutMs: number): number {
  let left = 0;
  for (let at = Math.max(1, attempt); at <= maxAttempts; at += 1) {
    left += attemptTimeoutMs;
    if (hasAttemptsLeft(at, maxAttempts)) left += scheduledDelay(schedule, at);
  }
  return left;
}

/**
 * The delay of a retry whose callback circuits held `heldMs` past its due times, so that it comes back
 * by its schedule's end: that end is `delayMs + leftMs - heldMs` from now (`leftMs`: scheduleLeftMs from
 * the retry's attempt on). Held longer than the rest of its schedule, the retry would otherwise wait
 * out its whole delay after the end and be found run out only then, later than `ISOLATION=off` parks
 * it. Never earlier than off would make that attempt (`delayMs - heldMs`), since `leftMs` ≥ 0.
 */
export function delayWithinSchedule(delayMs: number, leftMs: number, heldMs: number): number {
  return Math.min(delayMs, Math.max(0, delayMs + leftMs - heldMs));
}

/**
 * What is left of a callback's schedule: how long its attempts from the one due would take, every one
 * timing out (`scheduleLeftMs`), and how long open circuits held its earlier attempts past their due
 * times (`x-callback-held-ms`).
 */
export interface ScheduleLeft {
  leftMs: number;
  heldMs: number;
}

/** Attempt numbers, inclusive: what is left of a callback's schedule. */
export interface AttemptRange {
  from: number;
  to: number;
}
