import type { ConfirmChannel } from 'amqplib';
import type { Logger } from '../logger.js';
import type { DueHold } from './hold-until-due.js';
import type { LaneChannels } from './lane-channels.js';
import type { DueMover } from './move-due.js';
import type { createPipeline } from './pipeline.js';

/** Of DRAIN_TIMEOUT, what the closes after the drain may take at most (a quarter of it when shorter). */
const CLOSE_RESERVE_MS = 2_000;

/** Whether `work` settles within `ms`; it never rejects, and the timer keeps nothing alive. */
async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      timedOut,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Messages handed to the pipeline and not settled yet: what the stop drains. */
export interface InFlight {
  /** A message was handed to the pipeline. */
  add(): void;
  /** A message handed to it was settled. */
  settled(): void;
  /** Resolves once every message handed to the pipeline so far is settled (at once when none is). */
  untilDrained(): Promise<void>;
  /** Messages in flight now. */
  readonly count: number;
}

/** The count of messages in flight; `drained` resolves when it falls back to 0. */
export function createInFlight(): InFlight {
  let inFlight = 0;
  let drained: { promise: Promise<void>; resolve: () => void } | undefined;
  return {
    add() {
      inFlight += 1;
    },
    settled() {
      inFlight -= 1;
      if (inFlight === 0 && drained) {
        drained.resolve();
        drained = undefined;
      }
    },
    untilDrained() {
      if (inFlight === 0) return Promise.resolve();
      if (!drained) {
        let resolve = (): void => {};
        const promise = new Promise<void>((done) => (resolve = done));
        drained = { promise, resolve };
      }
      return drained.promise;
    },
    get count() {
      return inFlight;
    },
  };
}

/**
 * What a stopping worker drains and closes. The pipeline and the P.due mover are read when the stop
 * comes to them, as the worker holds them then: a start still under way may make them meanwhile.
 */
export interface Draining {
  lanes: Pick<LaneChannels, 'cancel'>;
  dueHold: Pick<DueHold<ConfirmChannel>, 'giveBackAll'>;
  inFlight: InFlight;
  pipeline(): Pick<ReturnType<typeof createPipeline>, 'stop' | 'giveBackWaiting'> | undefined;
  dueMover(): Pick<DueMover, 'close'> | undefined;
  /** Closes the broker side in the order the acks need, and the local side (worker.ts closeAll). */
  closeAll(): Promise<void>;
}

/**
 * The stop once the worker stops consuming: gives back at once what waited for a slot or its due
 * time, lets in-flight deliveries (and the settles, moves and holds under way) finish, then closes;
 * all of it within `drainTimeoutMs` (DRAIN_TIMEOUT).
 */
export async function drainAndClose(parts: Draining, drainTimeoutMs: number, logger: Logger): Promise<void> {
  const { lanes, dueHold, inFlight } = parts;
  // The whole stop, closes included, ends by DRAIN_TIMEOUT: a broker that stops answering (a resource
  // alarm, a partition) confirms no cancel and no close, and a SIGTERM must not wait for the SIGKILL.
  const deadline = Date.now() + drainTimeoutMs;
  const closeReserve = Math.min(CLOSE_RESERVE_MS, drainTimeoutMs / 4);
  const left = (reserve = 0): number => Math.max(0, deadline - reserve - Date.now());
  // No attempt starts from here on; once the consumers are cancelled nothing more arrives, and what
  // only waited for a slot goes back to its queue unattempted (pipeline.ts giveBack). Ordered shards
  // are not cancelled: what they delivered stays unacked until the close below hands them on.
  parts.pipeline()?.stop();
  if (!(await settlesWithin(lanes.cancel(), left(closeReserve))))
    logger.warn('the broker did not confirm the cancel of the consumers in time; draining anyway');
  // Held messages not due yet go back with them, so another worker has them when due, not after the drain.
  const returned = (parts.pipeline()?.giveBackWaiting() ?? 0) + dueHold.giveBackAll();
  logger.info({ returned }, 'draining: callbacks that waited for a slot or their due time went back to their queues unattempted');
  // Moves of due messages (plugin mode) in progress finish within the drain too.
  const finished = await settlesWithin(Promise.allSettled([inFlight.untilDrained(), parts.dueMover()?.close()]), left(closeReserve));
  if (!finished) logger.warn({ unfinished: inFlight.count }, 'drain timeout: unfinished deliveries return to the queue');
  // The last acks and give-backs reach the broker before the connection closes, or their messages would be delivered again.
  const closed = await settlesWithin(parts.closeAll(), left());
  if (!closed) logger.warn('the broker did not answer the closes before DRAIN_TIMEOUT; the connection is left to the process exit');
  logger.info('worker stopped');
}
