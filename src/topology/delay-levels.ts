import { DELAY_LEVELS, MAX_LEVEL_DELAY_MS } from '../formats/limits.js';

/**
 * Plugin-free delays as binary levels: level n is a queue whose every message waits 2^n seconds
 * (one fixed TTL per queue, so its head always expires first: no head-of-line blocking). A delay of
 * d seconds visits exactly the levels of the 1-bits of d, highest first, so 22 queues cover any
 * delay from 1 s to 2^22 − 1 s (48.5 days), to the second; the worker holds a message that leaves
 * them early for the last fraction of a second (levelDelaySeconds).
 *
 * The routing key spells d in binary, one topic word per level, highest level first. An exchange
 * with levels `top` … 0 still ahead routes a key straight to the queue of the highest of them whose
 * bit is set, or to the message's lane when none is: one routing step per level visited, never a walk
 * down an exchange chain (each exchange-to-exchange hop costs the broker a routing step of its own).
 * A last word after the bits carries the message's lane bucket (lanes.ts).
 */
export { DELAY_LEVELS, MAX_LEVEL_DELAY_MS } from '../formats/limits.js';

/**
 * How much earlier than its due time a delayed message leaves the levels, at least: the levels count
 * whole seconds, and every hop (a quorum queue's expiry, then its dead-letter publish) adds a little
 * time of its own. Arriving early, a message is held by the worker until due (hold-until-due.ts), so
 * its lateness no longer depends on the sub-second part of its delay.
 */
export const LEVEL_LEAD_MS = 250;

/**
 * Whole seconds the levels will wait for `delayMs`: the whole seconds of the delay less the lead, so
 * that a message leaves the levels between LEVEL_LEAD_MS and LEVEL_LEAD_MS + 1 s before it is due (0
 * for a delay under 1.25 s: it goes to its lane at once and is held there), and at most the maximum.
 */
export function levelDelaySeconds(delayMs: number): number {
  if (!(delayMs > LEVEL_LEAD_MS)) return 0;
  return Math.min(Math.floor((delayMs - LEVEL_LEAD_MS) / 1_000), 2 ** DELAY_LEVELS - 1);
}

/** The routing key that carries `seconds` through the levels. */
export function delayRoutingKey(seconds: number): string {
  return seconds.toString(2).padStart(DELAY_LEVELS, '0').split('').join('.');
}

/** A binding of a delay exchange: keys matching `bindingKey` go to level `to`'s queue, or to the lanes (the last word, the bucket, picks one). */
export interface LevelRoute {
  bindingKey: string;
  to: number | 'lanes';
}

/**
 * The bindings of an exchange with levels `top` … 0 still ahead: the entry exchange P.delay has all
 * 22 ahead, and level n's queue dead-letters into the exchange with levels n − 1 … 0 ahead. Words of
 * the levels behind (already waited or skipped) match anything.
 */
export function levelRoutes(top: number): LevelRoute[] {
  const behind = Array<string>(DELAY_LEVELS - 1 - top).fill('*');
  const routes: LevelRoute[] = [];
  for (let level = top; level >= 0; level -= 1) {
    routes.push({ bindingKey: [...behind, ...Array<string>(top - level).fill('0'), '1', '#'].join('.'), to: level });
  }
  routes.push({ bindingKey: [...behind, ...Array<string>(top + 1).fill('0'), '*'].join('.'), to: 'lanes' });
  return routes;
}

export const levelTtlMs = (level: number): number => 2 ** level * 1_000;
