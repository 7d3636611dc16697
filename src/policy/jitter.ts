/** A source of uniform numbers in [0, 1); injected so tests can fix it. */
export type Random = () => number;

/**
 * Spreads `delayMs` uniformly over ±`fraction` so callbacks that failed together (a receiver outage)
 * do not all come back in the same second. `fraction` 0 returns the delay unchanged.
 */
export function applyJitter(delayMs: number, fraction: number, random: Random): number {
  if (fraction <= 0) return delayMs;
  const factor = 1 + (random() * 2 - 1) * fraction;
  return Math.max(0, Math.round(delayMs * factor));
}
