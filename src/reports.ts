/**
 * What the delivery pipeline reports, and the port it reports through. Metrics, outcome events and
 * tracing listen to these reports and the consumer sends them, so the types live below all of them:
 * no observer imports the consumer.
 */
import type { Transition } from './isolation/health.js';
import type { DeliveryOutcome } from './policy/classify-outcome.js';
import type { Decision } from './policy/decide.js';

/** The queue a message was consumed from: a work lane's index, or `slow` (the overflow queue, P.slow). */
export type Lane = string;

/**
 * Why a copy was not stored: the broker returned it (no queue bound for it) or nacked it (e.g. a
 * queue at a max-length with `reject-publish`); no confirm came in time; its headers cannot be
 * encoded; the client refused it; or the channel closed.
 */
export type CopyFailure = 'returned' | 'nacked' | 'timeout' | 'too-large' | 'refused' | 'closed';

/** The callback a report is about. */
interface ReportedCallback {
  id: string;
  url: string;
  target: string;
  lane: Lane;
  /** The attempt this report is about; for a callback parked or held unattempted, the attempts made before. */
  attempt: number;
}

/** An attempt made: a request sent (every counted attempt is one), its outcome decided by the retry policy. */
export interface TriedReport extends ReportedCallback {
  kind: 'attempt';
  outcome: DeliveryOutcome;
  decision: Decision;
  /** When the next attempt is due, for a retry. */
  nextAttemptAt: string | undefined;
}

/** A cancelled callback parked in P.dead as `canceled`: no attempt made, none spent. */
export interface CanceledReport extends ReportedCallback {
  kind: 'canceled';
}

/** A paused target's callback held in P.paused when a worker first meets it: no attempt made, none spent. */
export interface HeldReport extends ReportedCallback {
  kind: 'held';
}

/**
 * A callback whose target's circuit stayed open until its retry schedule would have ended with every
 * attempt timing out, the target failing still: parked in P.dead as `exhausted` without another request.
 */
export interface ExpiredReport extends ReportedCallback {
  kind: 'expired';
  why: string;
}

export { CIRCUIT_OPEN } from './policy/verdict.js';

/** A message that is not a valid callback, parked in P.dead as `invalid`. */
export interface InvalidReport {
  kind: 'invalid';
  id: string;
  error: string;
}

/**
 * What became of a message at one step, reported after it was carried out (so reports match what
 * the broker holds). Consumers branch on `kind`, never on an outcome's error text.
 */
export type AttemptReport = TriedReport | CanceledReport | HeldReport | ExpiredReport | InvalidReport;

/**
 * What the pipeline tells the outside world: metrics and outcome events listen here, so the
 * delivery steps stay free of either.
 */
export interface PipelineObserver {
  reported(report: AttemptReport): void;
  /** A settle publish was confirmed by the broker after `seconds`. */
  confirmed(kind: 'retry' | 'dead', seconds: number): void;
  /** A settle copy could not be stored (`cause`), so the original was rejected for the broker to dead-letter. */
  settleFallback(kind: 'retry' | 'dead', cause: CopyFailure): void;
  transition(transition: Transition): void;
  inFlight(delta: 1 | -1): void;
  /**
   * A callback moved unattempted, its attempt unchanged: deferred while its target's circuit is open,
   * moved to the overflow queue while its target is busy, or stored in the delay path while its limit
   * holds it back for long (`limited`).
   */
  moved(kind: MoveKind): void;
}

export type MoveKind = 'deferred' | 'overflow' | 'limited';

/** Fans every report out to several observers. */
export function observeAll(observers: PipelineObserver[]): PipelineObserver {
  return {
    reported: (report) => observers.forEach((o) => o.reported(report)),
    confirmed: (kind, seconds) => observers.forEach((o) => o.confirmed(kind, seconds)),
    settleFallback: (kind, cause) => observers.forEach((o) => o.settleFallback(kind, cause)),
    transition: (transition) => observers.forEach((o) => o.transition(transition)),
    inFlight: (delta) => observers.forEach((o) => o.inFlight(delta)),
    moved: (kind) => observers.forEach((o) => o.moved(kind)),
  };
}
