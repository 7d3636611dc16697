import type { OriginLimit, PausedOrigin } from '../control/control-state.js';
import { describeLimit } from '../formats/target-limit.js';

const BY = { operator: 'by an operator', 'auto-pause': 'by AUTO_PAUSE_AFTER' } as const;

/**
 * What `callback-relay target list` prints: one line per paused origin, since when and by whom (a
 * pause marker written before markers said so shows no `by`); with `--json`, one JSON array of
 * `{ origin, since, by }` (`by`: `operator`, `auto-pause` or `null`).
 */
export function formatPaused(paused: readonly PausedOrigin[], json: boolean): string {
  if (json) return JSON.stringify(paused);
  if (paused.length === 0) return 'no target is paused';
  return paused.map(({ origin, since, by }) => `${origin}  paused since ${since}${by === null ? '' : `  ${BY[by]}`}`).join('\n');
}

/**
 * `target list`: the paused origins, then one line per limit the control stream sets (a cleared one
 * shows as cleared: it overrides TARGET_LIMITS_FILE's entry), none when there are none. With `--json`,
 * the array of paused origins as before, a limited origin's entry with `limit` (`{ rate (per second),
 * burst, concurrency }` or `null`) and `limitSetAt`; a limited origin that is not paused has its own
 * entry `{ origin, limit, limitSetAt }` after them.
 */
export function formatTargets(paused: readonly PausedOrigin[], limits: readonly OriginLimit[], json: boolean): string {
  if (json) {
    const byOrigin = new Map(limits.map(({ origin, limit, at }) => [origin, { limit, limitSetAt: at }]));
    const entries: object[] = paused.map((entry) => ({ ...entry, ...byOrigin.get(entry.origin) }));
    for (const { origin, limit, at } of limits)
      if (!paused.some((entry) => entry.origin === origin)) entries.push({ origin, limit, limitSetAt: at });
    return JSON.stringify(entries);
  }
  const lines = limits.map(
    ({ origin, limit, at }) => `${origin}  ${limit === null ? 'limit cleared' : `limited to ${describeLimit(limit)}`} since ${at}`,
  );
  return [formatPaused(paused, false), ...lines].join('\n');
}
