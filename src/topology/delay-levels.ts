/**
 * Plugin-free delays as binary levels: level n is a queue whose every message waits 2^n seconds
 * (one fixed TTL per queue, so its head always expires first: no head-of-line blocking). A delay of
 * d seconds visits exactly the levels of the 1-bits of d, highest first, so 22 queues cover any
 * delay from 1 s to 2^22 − 1 s (48.5 days), to the second.
 *
 * The routing key spells d in binary, one topic word per level, highest level first: level n's
 * exchange routes keys whose word for n is `1` to its queue and the others on to level n − 1.
 */
export const DELAY_LEVELS = 22;
export const MAX_LEVEL_DELAY_MS = (2 ** DELAY_LEVELS - 1) * 1_000;

/**
 * Whole seconds the levels will wait for `delayMs`: rounded to the nearest second, but at least one
 * for any positive delay (a short delay must not become none), and at most the maximum.
 */
export function levelDelaySeconds(delayMs: number): number {
  if (!(delayMs > 0)) return 0;
  return Math.min(Math.max(1, Math.round(delayMs / 1_000)), 2 ** DELAY_LEVELS - 1);
}

/** The routing key that carries `seconds` through the levels. */
export function delayRoutingKey(seconds: number): string {
  return seconds.toString(2).padStart(DELAY_LEVELS, '0').split('').join('.');
}

/** The binding key on level `level`'s exchange matching keys whose bit for that level is `bit`. */
export function levelBindingKey(level: number, bit: 0 | 1): string {
  return `${'*.'.repeat(DELAY_LEVELS - 1 - level)}${bit}.#`;
}

export const levelTtlMs = (level: number): number => 2 ** level * 1_000;
