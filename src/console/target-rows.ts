import type { TargetStats } from './event-window.js';
import type { TargetState } from './control-view.js';

/** One row of the Targets page. */
export interface TargetRow extends TargetStats {
  state: TargetState;
}

const EMPTY: Omit<TargetStats, 'origin' | 'lastSeen'> = {
  delivered: 0,
  retries: 0,
  dead: 0,
  held: 0,
  successRate: null,
  p50Ms: null,
  p95Ms: null,
  lastError: null,
};

/** Paused first, then circuits open, then the rest. */
const STATE_RANK: Record<TargetState, number> = { paused: 0, 'circuit open': 1, limited: 2, healthy: 3 };

/**
 * The Targets page's rows: every origin seen in the window, and every paused origin even without an
 * event in it, sorted by trouble: by state, then by failure rate (no attempt counts as no failure),
 * then by failed attempts, then by name. Pure.
 */
export function targetRows(
  stats: readonly TargetStats[],
  paused: readonly string[],
  stateOf: (origin: string) => TargetState,
): TargetRow[] {
  const byOrigin = new Map(stats.map((row) => [row.origin, row]));
  for (const origin of paused) if (!byOrigin.has(origin)) byOrigin.set(origin, { origin, ...EMPTY, lastSeen: '' });
  const rows = [...byOrigin.values()].map((row) => ({ ...row, state: stateOf(row.origin) }));
  const failureRate = (row: TargetRow): number => (row.successRate === null ? 0 : 1 - row.successRate);
  return rows.sort(
    (a, b) =>
      STATE_RANK[a.state] - STATE_RANK[b.state] ||
      failureRate(b) - failureRate(a) ||
      b.retries + b.dead - (a.retries + a.dead) ||
      a.origin.localeCompare(b.origin),
  );
}

/** The names a worker may broadcast a circuit of `origin` under: the origin itself, or its host (TARGET_KEY=host). */
export function healthKeys(origin: string): string[] {
  try {
    return [origin, new URL(origin).hostname];
  } catch {
    return [origin];
  }
}
