import { classifyOutcome, type DeliveryOutcome } from './classify-outcome.js';
import { applyJitter, type Random } from './jitter.js';
import { clampRetryAfter, parseRetryAfter } from './retry-after.js';
import { hasAttemptsLeft, scheduledDelay } from './retry-schedule.js';

/** Why a callback was parked in the dead-letter queue (the `x-callback-reason` header). */
export type DeadReason = 'exhausted' | 'rejected' | 'invalid' | 'forbidden-target' | 'canceled' | 'unsettled';

/** What the consumer must do with a message after an attempt. */
export type Decision =
  { kind: 'ack' } | { kind: 'retry'; delayMs: number; attempt: number; why: string } | { kind: 'dead'; reason: DeadReason; why: string };

export interface RetryPolicy {
  /** Delays before attempts 2, 3, … in ms. */
  schedule: readonly number[];
  /** Total attempts including the first. */
  maxAttempts: number;
  /** ± fraction applied to scheduled delays (not to Retry-After). */
  jitter: number;
  /** Upper clamp of Retry-After, ms. */
  retryAfterMaxMs: number;
  /** Required success body; '' accepts any 2xx. */
  successBody: string;
}

/**
 * The whole retry decision for attempt `attempt` (1-based) that produced `outcome`. Pure: the clock
 * (`nowMs`, for Retry-After dates) and `random` (jitter) are inputs.
 */
export function decide(outcome: DeliveryOutcome, attempt: number, policy: RetryPolicy, nowMs: number, random: Random): Decision {
  const verdict = classifyOutcome(outcome, policy.successBody);
  if (verdict.kind === 'success') return { kind: 'ack' };
  if (verdict.kind === 'terminal') return { kind: 'dead', reason: outcome.forbidden ? 'forbidden-target' : 'rejected', why: verdict.why };
  if (!hasAttemptsLeft(attempt, policy.maxAttempts)) return { kind: 'dead', reason: 'exhausted', why: verdict.why };
  const requested = parseRetryAfter(outcome.retryAfter, nowMs);
  const delayMs =
    requested === undefined
      ? applyJitter(scheduledDelay(policy.schedule, attempt), policy.jitter, random)
      : clampRetryAfter(requested, policy.retryAfterMaxMs);
  return { kind: 'retry', delayMs, attempt: attempt + 1, why: verdict.why };
}
