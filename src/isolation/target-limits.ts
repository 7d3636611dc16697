import type { TargetLimit } from '../formats/target-limit.js';
import { ALONE, msUntilNextTurn, workerShare, type Fleet, type WorkerShare } from './fleet-share.js';
import { TokenBucket } from './token-bucket.js';

/**
 * A target's rate lowered, or its requests paused, for the whole fleet: what a worker broadcasts on
 * P.control after a 429 or a 503 with Retry-After, and what the others take as their own.
 */
export interface Backoff {
  target: string;
  /** The share of the configured rate the fleet may use now (1 = all of it). */
  factor: number;
  /** No request to the target before this time (ms); 0 = no pause. */
  untilMs: number;
}

/** What the receiver's answer says about the rate it accepts. */
export interface Answer {
  status: number | undefined;
  /** Retry-After as ms from now, when the answer had a readable one. */
  retryAfterMs: number | undefined;
  /** The answer came back fast (below SLOW_THRESHOLD). */
  fast: boolean;
}

/** The lowest share of the configured rate a back-off goes down to. */
export const MIN_FACTOR = 1 / 64;
/** What each fast success gives back, as a share of the configured rate (additive increase). */
export const INCREASE_STEP = 0.01;
/** One multiplicative decrease per this long at most: the 429s of one burst are one signal. */
export const DECREASE_GAP_MS = 1_000;
/** 429s in a row without Retry-After that count as one signal to slow down. */
export const TOO_MANY_RUN = 3;
/** The pause such a run asks for, and the longest pause a Retry-After may ask for. */
export const RUN_PAUSE_MS = 1_000;
export const MAX_PAUSE_MS = 60_000;
/** A pause is broadcast again only when it ends at least this much later than the one known. */
const PAUSE_NEWS_MS = 250;
/** Targets with a back-off and no limit kept at most (their pause ended: forgotten first). */
const MAX_BACKED_OFF = 10_000;

interface Gate {
  limit: TargetLimit | undefined;
  factor: number;
  pausedUntil: number;
  lastDecrease: number;
  tooManyRun: number;
  bucket: TokenBucket | undefined;
  share: WorkerShare | undefined;
}

/**
 * Every target's limit as this worker applies it: its share of the fleet-wide limit (fleet-share.ts)
 * in a token bucket and a concurrency count, and the adaptive back-off (AIMD): a 429, or a 503 with
 * Retry-After, halves the rate (once a second at most) and pauses the target until Retry-After; each
 * fast success gives back INCREASE_STEP of it. An unlimited target gets the pause only. Pure: times
 * are inputs; the caller (target-isolation.ts) holds a target back while `mayStart` says no.
 */
export class TargetLimits {
  private readonly gates = new Map<string, Gate>();
  private fleet: Fleet = ALONE;

  /** An operator's limit for `target` (undefined: cleared). */
  set(target: string, limit: TargetLimit | undefined, nowMs: number): void {
    const gate = this.gates.get(target);
    if (limit === undefined) {
      if (!gate) return;
      gate.limit = undefined;
      gate.factor = 1;
      gate.bucket = undefined;
      gate.share = undefined;
      if (gate.pausedUntil <= nowMs) this.gates.delete(target);
      return;
    }
    const kept = gate ?? this.newGate();
    kept.limit = limit;
    kept.factor = 1;
    this.gates.set(target, kept);
    this.reshape(kept, nowMs);
  }

  /** The live workers changed: every share is worked out again. */
  setFleet(fleet: Fleet, nowMs: number): void {
    this.fleet = fleet;
    for (const gate of this.gates.values()) this.reshape(gate, nowMs);
  }

  /** Whether any target has a limit or a back-off. */
  get governsAny(): boolean {
    return this.gates.size > 0;
  }

  /** Whether `target` has a limit or a back-off (else it is never held back here). */
  governs(target: string): boolean {
    return this.gates.has(target);
  }

  /** Whether a request to `target`, which has `inFlight` under way in this worker, may start now. */
  mayStart(target: string, inFlight: number, nowMs: number): boolean {
    return this.msUntilOpen(target, inFlight, nowMs) === 0;
  }

  /**
   * How long until a request to `target` may start: 0 now; undefined when only an attempt ending
   * can open it (its concurrency share is in use).
   */
  msUntilOpen(target: string, inFlight: number, nowMs: number): number | undefined {
    const gate = this.gates.get(target);
    if (!gate) return 0;
    if (gate.pausedUntil > nowMs) return gate.pausedUntil - nowMs;
    if (gate.limit === undefined) {
      // A back-off that is over; one counting 429s in a row stays until a success.
      if (gate.tooManyRun === 0) this.gates.delete(target);
      return 0;
    }
    this.reshapeOnTurn(gate, nowMs);
    const concurrency = gate.share?.concurrency;
    if (concurrency !== undefined && inFlight >= concurrency) return concurrency === 0 ? msUntilNextTurn(nowMs) : undefined;
    return gate.bucket?.msUntilToken(nowMs) ?? 0;
  }

  /**
   * How long until the `n`-th request waiting for `target` (0: the next) may start, as its rate and
   * pause tell (undefined: no rate governs it, only attempts ending open it). A request's wait is what
   * decides whether its message may stay unacked in the worker (`TargetIsolation.outwaiting`).
   */
  msUntilNth(target: string, inFlight: number, n: number, nowMs: number): number | undefined {
    const gate = this.gates.get(target);
    const rate = gate?.share?.rate;
    if (!gate || rate === undefined || rate <= 0) return gate && gate.pausedUntil > nowMs ? gate.pausedUntil - nowMs : undefined;
    const first = this.msUntilOpen(target, inFlight, nowMs) ?? 0;
    return first + Math.ceil((n * 1_000) / rate);
  }

  /** A request to `target` started: it takes a token. */
  started(target: string, nowMs: number): void {
    this.gates.get(target)?.bucket?.take(nowMs);
  }

  /**
   * The receiver answered: a 429 or a 503 with Retry-After pauses the target and halves its rate
   * (a run of TOO_MANY_RUN 429s without Retry-After counts as one asking for RUN_PAUSE_MS); a fast
   * success gives back a step. Returns the back-off to broadcast when this one changed it.
   */
  answered(target: string, answer: Answer, nowMs: number): Backoff | undefined {
    const { status, retryAfterMs } = answer;
    const gate = this.gates.get(target);
    if (status !== 429 && !(status === 503 && retryAfterMs !== undefined)) {
      if (gate && status !== undefined && status >= 200 && status < 300) {
        gate.tooManyRun = 0;
        if (answer.fast && gate.limit?.rate !== undefined && gate.factor < 1) {
          gate.factor = Math.min(1, gate.factor + INCREASE_STEP);
          this.reshape(gate, nowMs);
        }
      }
      return undefined;
    }
    const kept = gate ?? this.remember(target);
    let pauseMs = retryAfterMs;
    if (pauseMs === undefined) {
      kept.tooManyRun += 1;
      if (kept.tooManyRun < TOO_MANY_RUN) return undefined;
      pauseMs = RUN_PAUSE_MS;
    }
    kept.tooManyRun = 0;
    const untilMs = nowMs + Math.min(pauseMs, MAX_PAUSE_MS);
    const longer = untilMs >= kept.pausedUntil + PAUSE_NEWS_MS;
    const lower = kept.limit?.rate !== undefined && nowMs - kept.lastDecrease >= DECREASE_GAP_MS && kept.factor > MIN_FACTOR;
    if (!longer && !lower) return undefined;
    if (lower) {
      kept.factor = Math.max(MIN_FACTOR, kept.factor / 2);
      kept.lastDecrease = nowMs;
    }
    kept.pausedUntil = Math.max(kept.pausedUntil, untilMs);
    this.reshape(kept, nowMs);
    return { target, factor: kept.factor, untilMs: kept.pausedUntil };
  }

  /** Another worker's back-off, taken as this one's own: the lower rate and the later pause win. */
  shareBackoff(backoff: Backoff, nowMs: number): void {
    const gate = this.gates.get(backoff.target) ?? this.remember(backoff.target);
    if (gate.limit?.rate !== undefined && backoff.factor < gate.factor) {
      gate.factor = Math.max(MIN_FACTOR, backoff.factor);
      gate.lastDecrease = nowMs;
    }
    gate.pausedUntil = Math.min(Math.max(gate.pausedUntil, backoff.untilMs), nowMs + MAX_PAUSE_MS);
    this.reshape(gate, nowMs);
  }

  /** For metrics: each limited or backed-off target's fleet-wide rate now (undefined: no rate), and whether it is paused. */
  *current(nowMs: number): IterableIterator<{ target: string; rate: number | undefined; factor: number; paused: boolean }> {
    for (const [target, gate] of this.gates) {
      const rate = gate.limit?.rate === undefined ? undefined : gate.limit.rate * gate.factor;
      yield { target, rate, factor: gate.factor, paused: gate.pausedUntil > nowMs };
    }
  }

  private newGate(): Gate {
    return {
      limit: undefined,
      factor: 1,
      pausedUntil: 0,
      lastDecrease: Number.NEGATIVE_INFINITY,
      tooManyRun: 0,
      bucket: undefined,
      share: undefined,
    };
  }

  /** A gate for a target that had none (a back-off of an unlimited target), within the bound. */
  private remember(target: string): Gate {
    const gate = this.newGate();
    this.gates.set(target, gate);
    this.bound(target);
    return gate;
  }

  private reshape(gate: Gate, nowMs: number): void {
    if (gate.limit === undefined) return;
    gate.share = workerShare(gate.limit, this.fleet, gate.factor, nowMs);
    const { rate, burst } = gate.share;
    if (rate === undefined) gate.bucket = undefined;
    else if (gate.bucket) gate.bucket.reshape(rate, burst, nowMs);
    else gate.bucket = new TokenBucket(rate, burst, nowMs);
  }

  /** A concurrency below the fleet's size rotates between the workers: the share follows the turn. */
  private reshapeOnTurn(gate: Gate, nowMs: number): void {
    const concurrency = gate.limit?.concurrency;
    if (concurrency !== undefined && concurrency < this.fleet.size) this.reshape(gate, nowMs);
  }

  /** Back-offs of unlimited targets are few; past the bound the oldest is forgotten. */
  private bound(keep: string): void {
    if (this.gates.size <= MAX_BACKED_OFF) return;
    for (const [target, gate] of this.gates) {
      if (target !== keep && gate.limit === undefined) {
        this.gates.delete(target);
        return;
      }
    }
  }
}
