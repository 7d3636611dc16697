import type { AutoPause } from '../control/auto-pause.js';
import type { ControlView } from '../control/control-state.js';
import type { Logger } from '../logger.js';
import type { Random } from '../policy/jitter.js';
import type { ScheduleRules } from '../policy/schedule-end.js';
import { heldRetry, RAN_OUT, verdictOf, type AttemptRecord } from '../policy/verdict.js';
import type { AttemptReport, InvalidReport, TriedReport } from '../reports.js';
import type { Settlement } from '../settle/settle.js';
import type { TopologyNames } from '../topology/topology-names.js';
import type { Job } from './admit.js';
import type { Attempted } from './attempt.js';
import type { Decoded } from './decode.js';
import { returnRoute, type MessageEffects, type Place } from './effects.js';

/**
 * Step 4's value: what to do with the message (a decision, or a hold), what its copy's headers
 * record, and the report made once it is carried out. `streak`: an attempt's origin, whose failure
 * streak its result extends or ends (AUTO_PAUSE_AFTER).
 */
export interface Concluded {
  settlement: Settlement;
  record: AttemptRecord;
  report: AttemptReport;
  streak?: string | undefined;
}

export interface ConcludeDeps {
  rules: ScheduleRules;
  random: Random;
}

/**
 * Step 4 for an attempt: the retry policy's verdict on its outcome (policy/verdict.ts), against its
 * schedule's end when circuits held it. Pure: the time is `nowMs`.
 */
export function concludeAttempt(
  { job, outcome, startedAt }: Attempted,
  deps: ConcludeDeps,
  nowMs: number,
): Concluded & { report: TriedReport } {
  const { delivery, target, lane } = job;
  const verdict = verdictOf(delivery, outcome, startedAt, deps.rules.retry, nowMs, deps.random);
  const { decision, record } = heldRetry(target, delivery, verdict, deps.rules, nowMs);
  const nextAttemptAt = decision.kind === 'retry' ? new Date(nowMs + decision.delayMs).toISOString() : undefined;
  const report: TriedReport = {
    kind: 'attempt',
    id: delivery.id,
    url: delivery.callback.url,
    target,
    lane,
    attempt: delivery.attempt,
    outcome,
    decision,
    nextAttemptAt,
  };
  return { settlement: decision, record, report, streak: job.origin };
}

/** A message that is not a valid callback: parked in P.dead as `invalid`. */
export function concludeInvalid({ id, attempt, error }: Extract<Decoded, { ok: false }>): Concluded {
  const record: AttemptRecord = {
    id,
    attempts: attempt - 1,
    firstAttemptAt: undefined,
    lastAttemptAt: undefined,
    lastStatus: undefined,
    lastError: error,
  };
  const report: InvalidReport = { kind: 'invalid', id, error };
  return { settlement: { kind: 'dead', reason: 'invalid', why: error }, record, report };
}

/** How often an ordered callback of a paused target looks again whether its target was resumed. */
export const ORDERED_PAUSE_RECHECK_MS = 15_000;

/**
 * A job admission turned away, unattempted: a cancelled callback is parked in P.dead as `canceled`;
 * a paused target's callback waits in P.paused (`hold`), its attempt count unchanged, and goes back
 * to its own queue when it cannot be held; a callback whose schedule ran out while its target's
 * circuit stayed open, the target failing still, is parked as `exhausted`, where `ISOLATION=off`
 * would have parked it by now after as many timeouts. The attempts made before count.
 */
export function concludeUnattempted(job: Job, why: 'canceled' | 'paused' | 'expired', names: TopologyNames): Concluded {
  switch (why) {
    case 'canceled':
      return { settlement: { kind: 'dead', reason: 'canceled', why: 'canceled by a cancel marker' }, ...unattempted(job, 'canceled') };
    case 'paused':
      // An ordered callback waits in the delay path instead, its key held: P.paused would hand it back to a lane.
      if (job.orderKey !== undefined)
        return { settlement: { kind: 'move', delayMs: ORDERED_PAUSE_RECHECK_MS, headers: {} }, ...unattempted(job, 'held') };
      // Its `paused` event is for this first hold only: the recirculation through P.paused.check (control reader) moves it without one.
      return {
        settlement: { kind: 'hold', queue: names.pausedQueue, returnTo: returnRoute(names, job.lane) },
        ...unattempted(job, 'held'),
      };
    case 'expired':
      return { settlement: { kind: 'dead', reason: 'exhausted', why: RAN_OUT }, ...unattempted(job, 'expired', RAN_OUT) };
  }
}

/** The record and report of a callback parked or held before an attempt: the attempts made before count. */
function unattempted(
  { lane, delivery, target }: Job,
  kind: 'canceled' | 'held' | 'expired',
  why?: string,
): { record: AttemptRecord; report: AttemptReport } {
  const attempts = delivery.attempt - 1;
  const record: AttemptRecord = {
    id: delivery.id,
    attempts,
    firstAttemptAt: delivery.firstAttemptAt,
    lastAttemptAt: undefined,
    lastStatus: undefined,
    lastError: why,
    policy: delivery.policy,
  };
  const reported = { id: delivery.id, url: delivery.callback.url, target, lane, attempt: attempts };
  return { record, report: kind === 'expired' ? { kind, ...reported, why: why ?? '' } : { kind, ...reported } };
}

export interface SettleDeps {
  effects: MessageEffects;
  /** AUTO_PAUSE_AFTER: failure streaks per origin that pause a target fleet-wide once long enough. */
  autoPause?: AutoPause | undefined;
  control?: Pick<ControlView, 'pauseTarget'> | undefined;
  logger: Logger;
  clock: () => number;
}

/**
 * Step 5: carry out a conclusion on the message's channel (effects.ts), then count an attempt's result
 * toward its origin's failure streak. Resolves once settled (or, no copy stored, rejected to P.dead
 * instead: the streak is left as it was then); rejects when the channel is gone.
 */
export async function settleConcluded(at: Place, concluded: Concluded, deps: SettleDeps): Promise<void> {
  if (!(await deps.effects.settle(at, concluded.settlement, concluded.record, concluded.report))) return;
  const origin = concluded.streak;
  if (origin !== undefined && deps.autoPause?.record(origin, concluded.settlement.kind === 'ack', deps.clock())) {
    deps.logger.warn({ origin }, 'target paused: every attempt failed for AUTO_PAUSE_AFTER; resume it with callback-relay target resume');
    deps.control?.pauseTarget?.(origin);
  }
}
