import { binding, exchange, queue, type Declaration } from './declare-list.js';
import type { TopologyNames } from './topology-names.js';

/**
 * HISTORY=on: the stream P.history, bound to P.events with `#`, so every outcome event is kept for
 * `maxAge` (a stream's `x-max-age`, e.g. 7D) and can be read again from any point in time. A stream
 * is an append-only log: reading it does not remove anything, and many readers can read it at once.
 * Retention drops whole segments once all their events are older than `maxAge`:
 * https://www.rabbitmq.com/docs/streams#retention
 */
export const historyStream = (names: TopologyNames, maxAge: string): Declaration[] => [
  exchange(names.eventsExchange, 'topic'),
  queue(names.historyQueue, { 'x-queue-type': 'stream', 'x-max-age': maxAge }),
  binding(names.historyQueue, names.eventsExchange, '#'),
];
