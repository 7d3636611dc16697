import type { HealthState } from '../isolation/health.js';
import type { Backoff } from '../isolation/target-limits.js';
import type { TargetLimit } from '../formats/target-limit.js';
import type { ControlMarker, PausedBy } from './control-markers.js';

export interface ControlStateLimits {
  /** Cancelled ids kept at most; the oldest are forgotten first. */
  maxCancelled: number;
  /** A cancel older than this is forgotten (the stream's own retention: CONTROL_MAX_AGE). */
  maxAgeMs: number;
}

/** A paused origin as `target list` shows it. */
export interface PausedOrigin {
  origin: string;
  /** When it was paused (its first pause marker since the last resume), an ISO time. */
  since: string;
  by: PausedBy | null;
}

/** An origin's limit as the control stream sets it: `null` when an operator cleared it (the file's limit no longer applies). */
export interface OriginLimit {
  origin: string;
  limit: TargetLimit | null;
  /** When it was set, an ISO time. */
  at: string;
}

/** What the pipeline asks of the control stream before an attempt. */
export interface ControlView {
  /**
   * Whether callback `id` was cancelled. `replayedAt` is its message's `x-replayed-at` stamp (as
   * decode reads it): a copy replayed from P.dead after its cancel is not cancelled by it, so a
   * canceled callback can be replayed.
   */
  isCancelled(id: string, replayedAt?: string): boolean;
  /** Whether callbacks to `origin` are paused. */
  isPaused(origin: string): boolean;
  /** Tells the other workers that this one's circuit for `target` opened or closed (best effort). */
  broadcastHealth?(target: string, state: HealthState): void;
  /** Pauses `origin` fleet-wide, as `callback-relay target pause` does (AUTO_PAUSE_AFTER; best effort). */
  pauseTarget?(origin: string): void;
  /** Tells the other workers that a receiver asked this one to slow down (best effort). */
  broadcastBackoff?(backoff: Backoff): void;
}

/**
 * What the markers read so far add up to: the cancelled ids and the paused origins. Pure and bounded:
 * no broker here, the clock is injected, and the cancelled set keeps at most `maxCancelled` ids, none
 * older than `maxAgeMs` (a marker the stream no longer keeps would not be read by a worker started
 * now either, so forgetting it keeps every worker alike). Paused origins are few and never expire:
 * a pause lasts until its resume.
 */
export class ControlState {
  /** Cancelled id → when it was cancelled (ms). A Map iterates in insertion order: oldest first. */
  private readonly cancelled = new Map<string, number>();
  /** Paused origin → when it was paused (ms), by whom when the marker says, and its newest pause marker (ms). */
  private readonly paused = new Map<string, { at: number; by: PausedBy | undefined; latest: number }>();
  /** Origin → its last resume (ms), so a renewed pause written as it was resumed does not pause it again. */
  private readonly resumed = new Map<string, number>();
  /** Origin → its newest limit marker: the limit (`null`: cleared) and when it was written (ms). */
  private readonly originLimit = new Map<string, { limit: TargetLimit | null; at: number }>();

  constructor(
    private readonly limits: ControlStateLimits,
    private readonly clock: () => number,
  ) {}

  /** Applies one marker, in stream order. */
  apply(marker: ControlMarker): void {
    const at = Date.parse(marker.at);
    switch (marker.type) {
      case 'cancel':
        // Re-inserted, so a cancel sent again counts from its latest marker.
        this.cancelled.delete(marker.id);
        this.cancelled.set(marker.id, at);
        this.evict();
        return;
      case 'pause': {
        const held = this.paused.get(marker.origin);
        if (held) {
          held.latest = Math.max(held.latest, at);
          return;
        }
        const since = marker.since === undefined ? at : Date.parse(marker.since);
        // A renewal of a pause that was resumed since: the resume wins, whatever order they were stored in.
        if (marker.since !== undefined && (this.resumed.get(marker.origin) ?? Number.NEGATIVE_INFINITY) >= since) return;
        this.paused.set(marker.origin, { at: since, by: marker.by, latest: at });
        return;
      }
      case 'resume':
        this.paused.delete(marker.origin);
        this.resumed.set(marker.origin, at);
        this.forgetOldResumes();
        return;
      case 'limit': {
        // The newest wins, whatever order they were stored in (a renewal carries its limit's own time).
        const known = this.originLimit.get(marker.origin);
        if (known === undefined || at >= known.at) this.originLimit.set(marker.origin, { limit: marker.limit, at });
        return;
      }
      case 'sync':
      case 'degraded':
      case 'recovered':
      case 'backoff':
        // Not state: a health broadcast is acted on live only (control-reader.ts).
        return;
    }
  }

  /** Whether `id` was cancelled, after `replayedAtMs` when given (a replay from P.dead outlives older cancels). */
  isCancelled(id: string, replayedAtMs?: number): boolean {
    const at = this.cancelled.get(id);
    if (at === undefined) return false;
    if (at < this.clock() - this.limits.maxAgeMs) {
      this.cancelled.delete(id);
      return false;
    }
    return replayedAtMs === undefined || at > replayedAtMs;
  }

  isPaused(origin: string): boolean {
    return this.paused.has(origin);
  }

  /** Paused origins, since when and by whom (`null`: a pause marker that does not say), oldest first. */
  pausedOrigins(): PausedOrigin[] {
    return [...this.paused].map(([origin, { at, by }]) => ({ origin, since: new Date(at).toISOString(), by: by ?? null }));
  }

  /**
   * Paused origins whose newest pause marker is older than `ageMs`: to be written again before the
   * stream's retention drops it, with `since` and `by` of the pause they renew.
   */
  pausesToRenew(ageMs: number): Array<{ origin: string; since: string; by: PausedBy | undefined }> {
    const before = this.clock() - ageMs;
    return [...this.paused]
      .filter(([, pause]) => pause.latest < before)
      .map(([origin, { at, by }]) => ({ origin, since: new Date(at).toISOString(), by }));
  }

  /** Every origin a limit marker named, with its newest limit (`null`: cleared), oldest origin first. */
  originLimits(): OriginLimit[] {
    return [...this.originLimit].map(([origin, { limit, at }]) => ({ origin, limit, at: new Date(at).toISOString() }));
  }

  /** The limit the control stream sets for `origin`: undefined when no marker named it. */
  limitOf(origin: string): TargetLimit | null | undefined {
    return this.originLimit.get(origin)?.limit;
  }

  /** Limits (not cleared ones) whose newest marker is older than `ageMs`: to be written again before the stream's retention drops them. */
  limitsToRenew(ageMs: number): OriginLimit[] {
    const before = this.clock() - ageMs;
    return this.originLimits().filter(({ limit, at }) => limit !== null && Date.parse(at) < before);
  }

  /** Cancelled ids held now. */
  get cancelledCount(): number {
    return this.cancelled.size;
  }

  /** A resume older than the stream's retention can no longer meet a renewal of its pause. */
  private forgetOldResumes(): void {
    const oldest = this.clock() - this.limits.maxAgeMs;
    for (const [origin, at] of this.resumed) if (at < oldest) this.resumed.delete(origin);
  }

  /** Drops ids past the size limit and, from the oldest, those past the age limit. */
  private evict(): void {
    const oldest = this.clock() - this.limits.maxAgeMs;
    for (const [id, at] of this.cancelled) {
      if (this.cancelled.size <= this.limits.maxCancelled && at >= oldest) break;
      this.cancelled.delete(id);
    }
  }
}
