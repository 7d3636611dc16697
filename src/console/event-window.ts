import type { OutcomeEvent } from '../events/outcome-events.js';

export interface WindowLimits {
  /** CONSOLE_WINDOW: events older than this are forgotten. */
  windowMs: number;
  /** CONSOLE_MAX_TARGETS: origins kept at most; past it, the one seen longest ago is forgotten. */
  maxTargets: number;
}

/** Counts of one minute. Dead letters count `dead` and `canceled` events: both park the callback in P.dead. */
export interface MinuteCounts {
  delivered: number;
  retries: number;
  dead: number;
}

/** What the window knows of one origin. */
export interface TargetStats {
  origin: string;
  delivered: number;
  retries: number;
  dead: number;
  /** Callbacks held because the origin was paused (`paused` events). */
  held: number;
  /** delivered / attempts, or `null` without an attempt in the window. */
  successRate: number | null;
  p50Ms: number | null;
  p95Ms: number | null;
  lastError: { at: string; text: string } | null;
  lastSeen: string;
}

/** Latency samples kept per origin: the newest this many attempts' durations. */
export const LATENCY_SAMPLES = 200;
const MINUTE_MS = 60_000;

interface TargetRecord {
  origin: string;
  /** Minute number (ms / 60 000) → counts, in arrival order. */
  minutes: Map<number, MinuteCounts & { held: number }>;
  /** Ring of [at ms, duration ms]. */
  latencies: Array<[number, number]>;
  nextLatency: number;
  lastError: { at: number; text: string } | null;
  lastSeen: number;
}

/**
 * The console's view of the last CONSOLE_WINDOW of outcome events (from P.history): deliveries,
 * retries and dead letters per minute, and per origin its counts, latency percentiles and last error.
 * Pure and bounded: the clock is injected; memory is one counter row per minute of the window, and per
 * origin (at most `maxTargets`) a row per minute plus LATENCY_SAMPLES durations (docs/console.md).
 */
export class EventWindow {
  private readonly totals = new Map<number, MinuteCounts>();
  /** A Map iterates in insertion order; an origin is re-inserted when seen, so the first is the stalest. */
  private readonly targets = new Map<string, TargetRecord>();
  /** Origins forgotten because of `maxTargets`, since the start. */
  forgottenTargets = 0;

  constructor(
    private readonly limits: WindowLimits,
    private readonly clock: () => number,
  ) {}

  /** Adds one event. Events outside the window (a stream read starts at a chunk's start) are skipped. */
  add(event: OutcomeEvent): void {
    const at = Date.parse(event.at);
    const now = this.clock();
    if (!Number.isFinite(at) || at < now - this.limits.windowMs) return;
    const minute = Math.floor(at / MINUTE_MS);
    const totals = this.totals.get(minute) ?? { delivered: 0, retries: 0, dead: 0 };
    this.totals.set(minute, totals);
    count(totals, event.type);
    const origin = originOf(event.url);
    if (origin === undefined) return;
    const record = this.touch(origin, at);
    const counts = record.minutes.get(minute) ?? { delivered: 0, retries: 0, dead: 0, held: 0 };
    record.minutes.set(minute, counts);
    count(counts, event.type);
    if (event.type === 'paused') counts.held += 1;
    if (event.durationMs !== undefined && event.type !== 'canceled') {
      record.latencies[record.nextLatency] = [at, event.durationMs];
      record.nextLatency = (record.nextLatency + 1) % LATENCY_SAMPLES;
    }
    if (event.type === 'retry-scheduled' || event.type === 'dead') {
      if (record.lastError === null || at >= record.lastError.at) record.lastError = { at, text: errorText(event) };
    }
    this.prune();
  }

  /** One row per minute of the window, oldest first, zeros included: the overview's chart. */
  series(): Array<{ minute: number } & MinuteCounts> {
    this.prune();
    const last = Math.floor(this.clock() / MINUTE_MS);
    const first = last - Math.ceil(this.limits.windowMs / MINUTE_MS) + 1;
    const rows: Array<{ minute: number } & MinuteCounts> = [];
    for (let minute = first; minute <= last; minute += 1)
      rows.push({ minute: minute * MINUTE_MS, ...(this.totals.get(minute) ?? { delivered: 0, retries: 0, dead: 0 }) });
    return rows;
  }

  /** Deliveries in the current minute so far, and in the last full minute (the current one alone jumps at each minute). */
  throughput(): { current: number; previous: number } {
    const minute = Math.floor(this.clock() / MINUTE_MS);
    return { current: this.totals.get(minute)?.delivered ?? 0, previous: this.totals.get(minute - 1)?.delivered ?? 0 };
  }

  /** Every origin seen in the window, in no particular order (target-rows.ts sorts them by trouble). */
  targetStats(): TargetStats[] {
    this.prune();
    const since = this.clock() - this.limits.windowMs;
    return [...this.targets.values()].map((record) => {
      const sum = { delivered: 0, retries: 0, dead: 0, held: 0 };
      for (const counts of record.minutes.values()) {
        sum.delivered += counts.delivered;
        sum.retries += counts.retries;
        sum.dead += counts.dead;
        sum.held += counts.held;
      }
      const attempts = sum.delivered + sum.retries + sum.dead;
      const durations = record.latencies
        .filter(([at]) => at >= since)
        .map(([, ms]) => ms)
        .sort((a, b) => a - b);
      return {
        origin: record.origin,
        ...sum,
        successRate: attempts === 0 ? null : sum.delivered / attempts,
        p50Ms: percentile(durations, 0.5),
        p95Ms: percentile(durations, 0.95),
        lastError:
          record.lastError && record.lastError.at >= since
            ? { at: new Date(record.lastError.at).toISOString(), text: record.lastError.text }
            : null,
        lastSeen: new Date(record.lastSeen).toISOString(),
      };
    });
  }

  /** Origins held now. */
  get targetCount(): number {
    return this.targets.size;
  }

  /** Forgets everything (a stream read starting again from the window's start). */
  clear(): void {
    this.totals.clear();
    this.targets.clear();
  }

  private touch(origin: string, at: number): TargetRecord {
    let record = this.targets.get(origin);
    if (record) this.targets.delete(origin);
    record ??= { origin, minutes: new Map(), latencies: [], nextLatency: 0, lastError: null, lastSeen: at };
    record.lastSeen = Math.max(record.lastSeen, at);
    this.targets.set(origin, record);
    for (const stalest of this.targets.keys()) {
      if (this.targets.size <= this.limits.maxTargets) break;
      this.targets.delete(stalest);
      this.forgottenTargets += 1;
    }
    return record;
  }

  /** Drops minutes that left the window, and origins with nothing left in it. */
  private prune(): void {
    const oldest = Math.floor((this.clock() - this.limits.windowMs) / MINUTE_MS);
    for (const minute of this.totals.keys()) if (minute < oldest) this.totals.delete(minute);
    for (const [origin, record] of this.targets) {
      for (const minute of record.minutes.keys()) if (minute < oldest) record.minutes.delete(minute);
      if (record.minutes.size === 0) this.targets.delete(origin);
    }
  }
}

function count(counts: MinuteCounts, type: OutcomeEvent['type']): void {
  if (type === 'delivered') counts.delivered += 1;
  else if (type === 'retry-scheduled') counts.retries += 1;
  else if (type === 'dead' || type === 'canceled') counts.dead += 1;
}

/** `HTTP 503`, the error, or both when they differ. */
function errorText(event: OutcomeEvent): string {
  const status = event.status !== undefined ? `HTTP ${event.status}` : '';
  const error = event.error !== undefined && event.error !== status ? event.error : '';
  return [status, error].filter((part) => part !== '').join(' ');
}

function percentile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? null;
}

/** The origin of a callback URL, or `undefined` (an `invalid` message has none). */
export function originOf(url: string): string | undefined {
  try {
    const origin = new URL(url).origin;
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}
