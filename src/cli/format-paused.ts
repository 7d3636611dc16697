import type { PausedOrigin } from '../control/control-state.js';

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
