import { idOf } from './fates.js';
import type { Attempt } from './ledger.js';
import { checkOrder, type KeyedCallback, type OrderVerdict } from './order-check.js';
import type { DeadEntry } from './queues.js';

/**
 * Ordered keys in a chaos run: every third callback (n mod 3 = 1) carries an `orderKey`, one of
 * `keys` keys in turn, so each key gets a callback every `3 × keys` callbacks, with every fate in the
 * mix (fates.ts): those that fail or hang hold their key. Its number within its key is in its URL
 * path (`/<key>/<seq>`) and its body; the ledger and the verdict derive both from the id's `n`.
 */
export const ORDERED_EVERY = 3;

/** The keys of a run with ordered callbacks (fewer when `--callbacks` is small). */
export const ORDERED_KEYS = 50;

/** The key and the number within it of callback `n`, or undefined for an unordered one. */
export function orderOf(n: number, keys: number): { key: string; seq: number } | undefined {
  if (keys < 1 || n % ORDERED_EVERY !== 1) return undefined;
  const j = (n - 1) / ORDERED_EVERY;
  return { key: `key-${String(j % keys).padStart(2, '0')}`, seq: Math.floor(j / keys) };
}

export interface OrderInput {
  run: string;
  callbacks: number;
  keys: number;
  byId: ReadonlyMap<string, Attempt[]>;
  dead: DeadEntry[];
  /** `--cancel`: the tick at which each cancel was first sent. */
  cancelTicks?: ReadonlyMap<string, number> | undefined;
  unconfirmed: string[];
  maxAttempts: number;
}

/** Groups a run's ordered callbacks by key, in their order, and checks each key (order-check.ts). */
export function judgeOrder(input: OrderInput): OrderVerdict {
  const deadById = new Map<string, DeadEntry[]>();
  for (const entry of input.dead) deadById.set(entry.id, [...(deadById.get(entry.id) ?? []), entry]);
  const unconfirmed = new Set(input.unconfirmed);
  const keys = new Map<string, KeyedCallback[]>();
  for (let n = 0; n < input.callbacks; n += 1) {
    const order = orderOf(n, input.keys);
    if (!order) continue;
    const id = idOf(input.run, n);
    const requests = input.byId.get(id) ?? [];
    const parked = deadById.get(id) ?? [];
    const callback: KeyedCallback = {
      seq: order.seq,
      id,
      requests,
      parked,
      cancelTick: input.cancelTicks?.get(id),
      unaccepted: unconfirmed.has(id) && requests.length === 0 && parked.length === 0,
    };
    keys.set(order.key, [...(keys.get(order.key) ?? []), callback]);
  }
  return checkOrder(keys, input.maxAttempts);
}
