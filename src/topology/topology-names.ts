import { DELAY_BITS, DELAY_LEVELS, DIGIT_BITS } from './delay-levels.js';
import { DEFAULT_LANES } from './lanes.js';

/** Every exchange and queue name, derived from the one prefix P. */
export interface TopologyNames {
  /** Exchange producers publish to (routing key `deliver`). x-delayed-message in plugin mode, else direct. */
  exchange: string;
  routingKey: 'deliver';
  /** Lane 0 of the work queues: where plain `deliver` lands. */
  workQueue: string;
  /** Every work lane, P.work first (P.work, P.work.1, …, P.work.<LANES − 1>). */
  workQueues: string[];
  /** A topic exchange that earlier builds declared in queues mode; only torn down now. */
  lanesExchange: string;
  /**
   * Plugin mode: the classic queue the plugin hands delayed messages to (routing key `due`); workers
   * move them on into P.work. See declare-delivery-path.ts for why it is not P.work itself.
   */
  dueQueue: string;
  dueRoutingKey: 'due';
  /** Slow lane of earlier versions: no longer filled, still drained by every worker. */
  slowQueue: string;
  /** Topic exchange of outcome events (`delivered`, `retry-scheduled`, `dead`). */
  eventsExchange: string;
  /** HISTORY=on: the stream of every outcome event, bound to P.events (src/history/). */
  historyQueue: string;
  /** The control stream of cancel and pause markers every worker reads (src/control/). */
  controlQueue: string;
  /**
   * Fanout exchange of the workers' heartbeats (src/control/fleet-presence.ts): each worker binds an
   * exclusive queue of its own, so every worker knows the live ones. Transient: declared by the workers.
   */
  presenceExchange: string;
  /** Held callbacks of paused targets, and the queue they are checked in (src/control/declare-paused.ts). */
  pausedQueue: string;
  pausedCheckQueue: string;
  /** Dead-letter queue operators inspect and replay from. */
  deadQueue: string;
  /** Queues mode: entry exchange of the delay levels (topic; routing key = the delay's bits). */
  delayExchange: string;
  /** Queues mode: the queue of the level whose messages wait `seconds` (delay-levels.ts), `P.delay.240s`. */
  delayLevel: (seconds: number) => string;
  /** Queues mode: every level queue, highest first. */
  delayLevels: string[];
  /** Queues mode: the exchange the levels of digit `position` dead-letter into, `P.delay.below.16s` for position 1. */
  delayLevelExchange: (position: number) => string;
  /**
   * Queues mode of earlier versions: one level per bit, queues P.delay.21 … P.delay.00 and exchanges
   * P.delay.20 … P.delay.00. Never declared now: what they still hold drains on its own
   * (retire-binary-levels.ts), and the teardown deletes them.
   */
  binaryLevels: { queues: string[]; exchanges: string[] };
}

export function topologyNames(prefix: string, lanes = DEFAULT_LANES): TopologyNames {
  const delayLevel = (seconds: number): string => `${prefix}.delay.${seconds}s`;
  const binaryLevel = (bit: number): string => `${prefix}.delay.${String(bit).padStart(2, '0')}`;
  const bits = Array.from({ length: DELAY_BITS }, (_, i) => DELAY_BITS - 1 - i);
  return {
    exchange: prefix,
    routingKey: 'deliver',
    workQueue: `${prefix}.work`,
    workQueues: Array.from({ length: lanes }, (_, lane) => (lane === 0 ? `${prefix}.work` : `${prefix}.work.${lane}`)),
    lanesExchange: `${prefix}.lanes`,
    slowQueue: `${prefix}.slow`,
    dueQueue: `${prefix}.due`,
    dueRoutingKey: 'due',
    deadQueue: `${prefix}.dead`,
    eventsExchange: `${prefix}.events`,
    historyQueue: `${prefix}.history`,
    controlQueue: `${prefix}.control`,
    presenceExchange: `${prefix}.presence`,
    pausedQueue: `${prefix}.paused`,
    pausedCheckQueue: `${prefix}.paused.check`,
    delayExchange: `${prefix}.delay`,
    delayLevel,
    delayLevels: DELAY_LEVELS.map((level) => delayLevel(level.seconds)),
    delayLevelExchange: (position) => `${prefix}.delay.below.${2 ** (position * DIGIT_BITS)}s`,
    binaryLevels: { queues: bits.map(binaryLevel), exchanges: bits.slice(1).map(binaryLevel) },
  };
}
