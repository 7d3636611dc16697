import { queue, type Declaration } from './declare-list.js';
import type { TopologyNames } from './topology-names.js';

/**
 * How long P.control keeps a marker: longer than any retry schedule a worker runs (the default one
 * spans under 2 days), so a callback never outlives its cancel. Fixed, because every worker and
 * producer declares the stream and must declare it alike.
 */
export const CONTROL_MAX_AGE = '30D';
export const CONTROL_MAX_AGE_MS = 30 * 86_400_000;

/**
 * The control stream P.control: cancel and pause markers, read by every worker from its first marker.
 * A stream, not a queue, because each worker must see every marker, and a worker started later those
 * written before it; reading removes nothing: https://www.rabbitmq.com/docs/streams#consuming
 */
export const controlStream = (names: TopologyNames): Declaration[] => [
  queue(names.controlQueue, { 'x-queue-type': 'stream', 'x-max-age': CONTROL_MAX_AGE }),
];
