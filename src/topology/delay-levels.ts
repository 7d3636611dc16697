/*
 * Delays: the two delay modes, and the arithmetic of queues mode's radix-16 levels (pure: no broker).
 */
import { RelayError } from '../errors.js';
import { DELAY_BITS } from '../formats/limits.js';

/**
 * Plugin-free delays as levels of radix 16: the delay d in whole seconds is written in hexadecimal,
 * and each non-zero digit is one level queue whose every message waits digit × 16^position seconds
 * (one fixed TTL per queue, so its head always expires first: no head-of-line blocking). A delay
 * visits the levels of its non-zero digits, lowest first: 78 queues cover any delay from 1 s to
 * 2^22 − 1 s (48.5 days), to the second, in at most 6 hops (2 for a minute or two, about 2.4 for the
 * default retry schedule; one level per bit took 3.9 and 5.8). Each hop is an at-least-once
 * dead-letter publish by the level's quorum queue, the broker's work per delayed message, so fewer
 * hops move more messages a second. The worker holds a message that leaves the levels early for the
 * last fraction of a second (levelDelaySeconds, hold-until-due.ts).
 *
 * Lowest first, because a burst of publishes then leaves its first levels spread over their 1 … 15
 * different waits (and queues), and each message leaves its last level when it falls due: no level
 * sees more exits a second than fall due. Highest first (the version before) sent every delay of
 * 16 s or more into the 16 s level first, so a burst left that one queue as a burst again.
 *
 * The routing key spells d one word per hexadecimal digit, highest first, each digit written `x0` …
 * `xf` (KeySpelling), then the lane bucket: a topic binding matches a digit's word. The first wire
 * contract's spelling, 22 binary words, is bound beside it and still routed the same way. An exchange
 * with digits `bottom` … top still ahead routes a key straight to the level of the lowest of them that
 * is not 0, or to the message's lane when all are: one routing step per level visited, never a walk
 * down an exchange chain.
 */
export { DELAY_BITS, MAX_LEVEL_DELAY_MS } from '../formats/limits.js';

/** Bits per digit: radix 16. */
export const DIGIT_BITS = 4;

/** Digit positions: 0 (1 … 15 s) to 5 (1 … 3 × 2^20 s; the top digit has the 2 bits left). */
export const DIGITS = Math.ceil(DELAY_BITS / DIGIT_BITS);

/** A level queue: digit `digit` at `position`, whose messages wait `seconds` = digit × 16^position. */
export interface DelayLevel {
  position: number;
  digit: number;
  seconds: number;
}

const digitMax = (position: number): number => 2 ** Math.min(DIGIT_BITS, DELAY_BITS - position * DIGIT_BITS) - 1;
const digitOf = (seconds: number, position: number): number => Math.floor(seconds / 2 ** (position * DIGIT_BITS)) % 2 ** DIGIT_BITS;

/** Every level, highest first (78 with 22 bits). */
export const DELAY_LEVELS: readonly DelayLevel[] = Array.from({ length: DIGITS }, (_, i) => DIGITS - 1 - i).flatMap((position) =>
  Array.from({ length: digitMax(position) }, (_, i) => digitMax(position) - i).map((digit) => ({
    position,
    digit,
    seconds: digit * 2 ** (position * DIGIT_BITS),
  })),
);

/** The levels a delay of `seconds` visits, as their waits in seconds, in the order visited: lowest first. */
export function levelsVisited(seconds: number): number[] {
  const visited: number[] = [];
  for (let position = 0; position < DIGITS; position += 1) {
    const digit = digitOf(seconds, position);
    if (digit > 0) visited.push(digit * 2 ** (position * DIGIT_BITS));
  }
  return visited;
}

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
  return Math.min(Math.floor((delayMs - LEVEL_LEAD_MS) / 1_000), 2 ** DELAY_BITS - 1);
}

/**
 * How a routing key spells a delay. `hex`, what the relay publishes: 6 words, one per hexadecimal
 * digit, highest first, each `x` and the digit (60 s = 0x3c is `x0.x0.x0.x0.x3.xc`). `binary`, the
 * first wire contract's and still accepted: 22 words of one bit each, highest first. A topic exchange
 * matches a key word by word against every binding, so a key of 6 words routes in a fraction of the
 * broker's time that one of 22 takes, at the entry and at every hop (docs/delay-modes.md, "The topic
 * routing of the delay keys"). The two never match each other's bindings: a binding has a literal word
 * of its own spelling (`0`/`1` or `x0` … `xf`), which no key of the other has, or, at the last
 * exchange, only `*` words, as many as a key of its spelling has (7 or 23, without `#`).
 */
export type KeySpelling = 'hex' | 'binary';
export const KEY_SPELLINGS: readonly KeySpelling[] = ['hex', 'binary'];

/** A digit's words at `position`: one `x` word in hex, its bits in binary (4, or 2 for the top digit); '*' for any. */
function digitWords(spelling: KeySpelling, position: number, digit: number | '*'): string[] {
  if (spelling === 'hex') return [digit === '*' ? '*' : `x${digit.toString(16)}`];
  const width = Math.min(DIGIT_BITS, DELAY_BITS - position * DIGIT_BITS);
  return Array.from({ length: width }, (_, i) => (digit === '*' ? '*' : String((digit >> (width - 1 - i)) & 1)));
}

/** The routing key that carries `seconds` through the levels, in hex (what the relay publishes) or binary. */
export function delayRoutingKey(seconds: number, spelling: KeySpelling = 'hex'): string {
  return Array.from({ length: DIGITS }, (_, i) => DIGITS - 1 - i)
    .flatMap((position) => digitWords(spelling, position, digitOf(seconds, position)))
    .join('.');
}

/**
 * A binding of a delay exchange: keys matching `bindingKey` go to the level that waits `to` seconds,
 * to the lanes (the last word, the bucket, picks one), or, for a key without a bucket, to P.work.
 */
export interface LevelRoute {
  bindingKey: string;
  to: number | 'lanes' | 'no-bucket';
}

/**
 * The bindings of an exchange with the digit positions `ahead` still to visit, in the order they are
 * visited, for keys of one spelling: each level of a digit ahead, bound by its own words after zeros
 * for the digits ahead that come before it, and the lanes, for a key whose digits ahead are all 0. The
 * words of digits behind (already waited) or visited later match anything; a run of those at the end
 * is left to the `#` that also takes the bucket, so each binding key is as short as it can be (the
 * unbinding of an earlier version's levels names its binary keys exactly: level-layouts.ts).
 */
export function digitRoutes(ahead: readonly number[], spelling: KeySpelling): LevelRoute[] {
  const order = (position: number): number => (ahead.includes(position) ? ahead.indexOf(position) : Infinity);
  /** The key's words: digit `digit` at `target`, 0 for the digits ahead before it, else '*'. */
  const words = (target: number, digit: number): string[] =>
    Array.from({ length: DIGITS }, (_, i) => DIGITS - 1 - i).flatMap((position) => {
      if (position === target) return digitWords(spelling, position, digit);
      return digitWords(spelling, position, order(position) < order(target) ? 0 : '*');
    });
  const routes: LevelRoute[] = [];
  for (const position of ahead) {
    for (let digit = digitMax(position); digit >= 1; digit -= 1) {
      const key = words(position, digit);
      while (key.at(-1) === '*') key.pop();
      routes.push({ bindingKey: [...key, '#'].join('.'), to: digit * 2 ** (position * DIGIT_BITS) });
    }
  }
  // No target: every digit ahead comes before it, so all of them are 0.
  const zeros = words(-1, 0);
  routes.push({ bindingKey: [...zeros, '*'].join('.'), to: 'lanes' });
  routes.push({ bindingKey: zeros.join('.'), to: 'no-bucket' });
  return routes;
}

/**
 * The bindings of an exchange with digits `bottom` … DIGITS − 1 still ahead, visited lowest first, for
 * keys of `spelling`: the entry exchange P.delay has all of them ahead (0), and a level at position n
 * dead-letters into the exchange with n + 1 … ahead (DIGITS: none, only the lanes).
 */
export function levelRoutes(bottom: number, spelling: KeySpelling): LevelRoute[] {
  return digitRoutes(
    Array.from({ length: Math.max(0, DIGITS - bottom) }, (_, i) => bottom + i),
    spelling,
  );
}

export const levelTtlMs = (seconds: number): number => seconds * 1_000;

export type DelayModeSetting = 'auto' | 'plugin' | 'queues';
export type DelayMode = 'plugin' | 'queues';

/** `auto` takes the plugin when the broker has it; an explicit `plugin` without it is an error. */
export function resolveDelayMode(requested: DelayModeSetting, hasDelayedPlugin: boolean): DelayMode {
  if (requested === 'queues') return 'queues';
  if (hasDelayedPlugin) return 'plugin';
  if (requested === 'auto') return 'queues';
  throw new RelayError(
    'CR_ERR_DELAY_MODE',
    'DELAY_MODE=plugin but the broker has no x-delayed-message exchange type: enable rabbitmq_delayed_message_exchange, or set DELAY_MODE=queues',
  );
}
