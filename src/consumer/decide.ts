import { decide, type Decision, type RetryPolicy } from '../policy/decide.js';
import type { DeliveryOutcome } from '../policy/classify-outcome.js';
import type { Random } from '../policy/jitter.js';
import type { Delivery } from './decode.js';
import type { AttemptRecord } from './settle.js';

export interface Verdict {
  decision: Decision;
  record: AttemptRecord;
}

/**
 * Step 3: asks the pure policy what to do with an attempt's outcome and records the attempt for the
 * headers of a retry or dead-letter copy. `policy` is the worker's own; a callback with a named policy
 * is decided by the one decode resolved for it. The clock and random source are injected.
 */
export function createDecider(policy: RetryPolicy, clock: () => number, random: Random) {
  return (delivery: Delivery, outcome: DeliveryOutcome, startedAtMs: number): Verdict => {
    const decision = decide(outcome, delivery.attempt, delivery.policy?.retry ?? policy, clock(), random);
    const startedAt = new Date(startedAtMs).toISOString();
    return {
      decision,
      record: {
        id: delivery.id,
        attempts: delivery.attempt,
        firstAttemptAt: delivery.firstAttemptAt ?? startedAt,
        lastAttemptAt: startedAt,
        lastStatus: outcome.status,
        lastError: decision.kind === 'ack' ? undefined : (outcome.error ?? decision.why),
        policy: delivery.policy,
      },
    };
  };
}

export type Decider = ReturnType<typeof createDecider>;
