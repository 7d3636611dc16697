import { HEADER } from '../message/headers.js';
import { delayRoutingKey, levelDelaySeconds } from './delay-levels.js';
import type { DelayMode } from './delay-mode.js';
import { laneRoutingKey } from './lanes.js';
import type { TopologyNames } from './topology-names.js';

/** The plugin keeps x-delay in an unsigned 32-bit integer of milliseconds. */
export const MAX_PLUGIN_DELAY_MS = 2 ** 32 - 1;

export interface Route {
  exchange: string;
  routingKey: string;
  /** Headers the route needs (x-delay in plugin mode). */
  headers: Record<string, unknown>;
}

/**
 * Where to publish a message of lane bucket `bucket` so that it reaches its work lane after `delayMs`,
 * published at `nowMs`. In queues mode a delayed message carries its due time (HEADER.dueAt): the
 * levels count whole seconds and let it out early, and the worker holds it for the rest.
 */
export function deliveryRoute(names: TopologyNames, mode: DelayMode, delayMs: number, bucket: number, nowMs: number): Route {
  const now: Route = { exchange: names.exchange, routingKey: laneRoutingKey(bucket), headers: {} };
  if (mode === 'plugin') {
    const ms = Math.min(Math.round(delayMs), MAX_PLUGIN_DELAY_MS);
    // Delayed messages land in P.due, a classic queue: see declare-delivery-path.ts.
    return ms > 0 ? { ...now, routingKey: `${names.dueRoutingKey}.${bucket}`, headers: { 'x-delay': ms } } : now;
  }
  if (!(delayMs >= 1)) return now;
  const headers = { [HEADER.dueAt]: Math.round(nowMs + delayMs) };
  const seconds = levelDelaySeconds(delayMs);
  // Under a level's worth: straight to the lane, where the worker holds it until due.
  if (seconds === 0) return { ...now, headers };
  // The bucket rides as the key's last word; the last delay exchange binds it to its lane.
  return { exchange: names.delayExchange, routingKey: `${delayRoutingKey(seconds)}.${bucket}`, headers };
}
