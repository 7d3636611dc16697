import { createHash } from 'node:crypto';

/**
 * The marker a logout appends to P.control, so that every console replica (each follows the stream
 * into memory) refuses the session from then on. Its type is one no worker knows: a worker's reader
 * skips markers it cannot parse (src/control/control-markers.ts), so it changes nothing there.
 * `session` is a digest of the session id, not the id itself; `until` is when the session would have
 * expired, after which the marker is forgotten.
 */
export interface SessionEndMarker {
  type: 'console-session-end';
  session: string;
  until: string;
  at: string;
}

/** Ended sessions a replica remembers at most; only logged-in operators write them, so this is generous. */
export const MAX_ENDED_SESSIONS = 100_000;

/** What a marker names a session by: sha256 of its id, base64url. */
export const sessionDigest = (sessionId: string): string => createHash('sha256').update(sessionId, 'utf8').digest('base64url');

/** The marker ending session `sessionId`, which would have expired at `expiresMs`. */
export function sessionEndMarker(sessionId: string, expiresMs: number, nowMs: number): SessionEndMarker {
  return {
    type: 'console-session-end',
    session: sessionDigest(sessionId),
    until: new Date(expiresMs).toISOString(),
    at: new Date(nowMs).toISOString(),
  };
}

/** A session-end marker read from P.control, or `undefined` for anything else on the stream. */
export function parseSessionEnd(content: Buffer): SessionEndMarker | undefined {
  try {
    const value = JSON.parse(content.toString('utf8')) as Record<string, unknown> | null;
    if (typeof value !== 'object' || value === null || value.type !== 'console-session-end') return undefined;
    const { session, until, at } = value;
    if (typeof session !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(session)) return undefined;
    if (typeof until !== 'string' || Number.isNaN(Date.parse(until)) || typeof at !== 'string' || Number.isNaN(Date.parse(at)))
      return undefined;
    return { type: 'console-session-end', session, until, at };
  } catch {
    return undefined;
  }
}

/**
 * The sessions ended by a logout, as read from P.control. Pure, clock injected, bounded: a marker is
 * kept only until its session would have expired anyway, and at most `max` of them (the soonest to
 * expire are dropped first; an expired cookie is refused on its own).
 */
export class EndedSessions {
  /** Digest → when the session expires (ms). */
  private readonly ended = new Map<string, number>();

  constructor(
    private readonly clock: () => number,
    private readonly max = MAX_ENDED_SESSIONS,
  ) {}

  apply(marker: SessionEndMarker): void {
    const until = Date.parse(marker.until);
    if (until <= this.clock()) return;
    this.ended.set(marker.session, until);
    if (this.ended.size > this.max) this.prune();
  }

  /** Whether session `sessionId` was ended. */
  has(sessionId: string): boolean {
    const until = this.ended.get(sessionDigest(sessionId));
    return until !== undefined && until > this.clock();
  }

  get size(): number {
    return this.ended.size;
  }

  private prune(): void {
    const now = this.clock();
    for (const [digest, until] of this.ended) if (until <= now) this.ended.delete(digest);
    if (this.ended.size <= this.max) return;
    const soonest = [...this.ended].sort((a, b) => a[1] - b[1]).slice(0, this.ended.size - this.max);
    for (const [digest] of soonest) this.ended.delete(digest);
  }
}
