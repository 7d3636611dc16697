/** How many failed logins a throttle allows, over what window, and how many keys it remembers. */
export interface ThrottleLimits {
  /** Failures of one client address within `windowMs` before it is refused. */
  perClient: number;
  /** Failures of all clients together within `windowMs` before every login attempt is refused. */
  global: number;
  windowMs: number;
  /** Client addresses remembered at most; past it the one whose window began first is forgotten. */
  maxClients: number;
}

/** The console's throttle: 10 failures per address, 100 in all, per 5 minutes; 10,000 addresses (about 1 MB). */
export const LOGIN_THROTTLE: ThrottleLimits = { perClient: 10, global: 100, windowMs: 5 * 60_000, maxClients: 10_000 };

/** Refused: by whose count, and for how long. */
export interface Throttled {
  scope: 'client' | 'global';
  retryAfterMs: number;
}

interface Window {
  failures: number;
  /** When this window ends and the count starts again (ms). */
  resetAt: number;
}

/**
 * Counts failed logins (a form's token or a bearer token that matches no operator) per client
 * address and across all of them, in fixed windows. A client past its count is refused until its
 * window ends; past the global count every attempt is, so an attacker rotating addresses gains
 * nothing by it. Pure, with an injected clock; memory is bounded by `maxClients` (windows that have
 * ended are dropped first, then the oldest).
 */
export class LoginThrottle {
  private readonly clients = new Map<string, Window>();
  private all: Window = { failures: 0, resetAt: 0 };

  constructor(
    readonly limits: ThrottleLimits,
    private readonly clock: () => number,
  ) {}

  /** Whether `client` may try now; `undefined` means yes. */
  check(client: string): Throttled | undefined {
    const now = this.clock();
    if (this.all.resetAt > now && this.all.failures >= this.limits.global) return { scope: 'global', retryAfterMs: this.all.resetAt - now };
    const own = this.clients.get(client);
    if (own !== undefined && own.resetAt > now && own.failures >= this.limits.perClient)
      return { scope: 'client', retryAfterMs: own.resetAt - now };
    return undefined;
  }

  /** Counts a failure of `client`; returns the refusal it has just earned, if this failure reached a limit. */
  fail(client: string): Throttled | undefined {
    const now = this.clock();
    if (this.all.resetAt <= now) this.all = { failures: 0, resetAt: now + this.limits.windowMs };
    this.all.failures += 1;
    let own = this.clients.get(client);
    if (own === undefined || own.resetAt <= now) {
      this.clients.delete(client);
      own = { failures: 0, resetAt: now + this.limits.windowMs };
      this.clients.set(client, own);
      this.evict(now);
    }
    own.failures += 1;
    if (this.all.failures === this.limits.global) return { scope: 'global', retryAfterMs: this.all.resetAt - now };
    if (own.failures === this.limits.perClient) return { scope: 'client', retryAfterMs: own.resetAt - now };
    return undefined;
  }

  /** A successful login clears its client's count (not the global one). */
  succeed(client: string): void {
    this.clients.delete(client);
  }

  /** Client addresses held now. */
  get size(): number {
    return this.clients.size;
  }

  /** A Map iterates in insertion order, and a window is inserted when it begins: the oldest come first. */
  private evict(now: number): void {
    for (const [client, window] of this.clients) {
      if (this.clients.size <= this.limits.maxClients && window.resetAt > now) break;
      this.clients.delete(client);
    }
  }
}

/** `Retry-After` in whole seconds, at least 1. */
export const retryAfterSeconds = (throttled: Throttled): number => Math.max(1, Math.ceil(throttled.retryAfterMs / 1000));
