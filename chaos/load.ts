import { loadConfig } from '../src/config/load-config.js';
import { isRelayError } from '../src/errors.js';
import { createLogger } from '../src/logger.js';
import { createPublisher } from '../src/producer/publisher.js';
import { fateOf, idOf } from './fates.js';
import type { Ledger } from './ledger.js';
import { orderOf } from './ordered.js';

export interface LoadStats {
  /** Callbacks the broker confirmed. */
  confirmed: number;
  /** Publishes tried again after an error (same id, as docs/library-and-cli.md prescribes for an unknown outcome). */
  republished: number;
  /** Ids published more than once: a second copy may exist, so a second delivery is not a relay bug. */
  republishedIds: Set<string>;
  /** Ids never confirmed before the deadline: the producer was told so, they are not "accepted". */
  unconfirmed: string[];
  errors: Record<string, number>;
  /** `--cancel`: ids whose cancel marker the broker confirmed. */
  cancelled: Set<string>;
  /** `--cancel`: when each cancel was first sent, in the receiver's order of events (ledger.tick()). */
  cancelTicks: Map<string, number>;
}

export interface LoadOptions {
  amqpUrl: string;
  prefix: string;
  /** The workers' delay mode: the publisher declares the same exchange type (auto would pick the plugin wherever the broker has it). */
  mode: 'queues' | 'plugin';
  run: string;
  callbacks: number;
  /** Publishing is spread evenly over this long, so chaos events hit a relay under load. */
  spreadMs: number;
  /** Give up on a callback that still has no confirm after this long. */
  giveUpMs: number;
  ledger: Ledger;
  /** `--cancel`: cancels every `always-fail` callback this long after its publish was confirmed (during its retries). */
  cancelAfterMs?: number | undefined;
  /** Pending at scale: callback n is published with `deliverAt` = start + `afterMs` + n × `spreadMs` ÷ callbacks. */
  due?: DueSchedule | undefined;
  /**
   * Ordered keys (ordered.ts): every third callback carries an `orderKey`, one of this many; a key's
   * callbacks are published one after another, each once the one before it was confirmed or given up.
   * With `due`, an ordered callback (which refuses a first-attempt delay) has no `deliverAt`: it is
   * published at the time it would have fallen due instead (publishAt), so its key meets the same faults.
   */
  orderedKeys?: number | undefined;
}

/** When scheduled callbacks fall due, from the start of publishing: evenly over `spreadMs`, the first after `afterMs`. */
export interface DueSchedule {
  afterMs: number;
  spreadMs: number;
}

/** The time callback `n` of `callbacks` falls due under `due`, for a run that started publishing at `startedAt`. */
export const dueAt = (due: DueSchedule, startedAt: number, n: number, callbacks: number): number =>
  startedAt + due.afterMs + Math.floor((n * due.spreadMs) / callbacks);

/** Whether callback `n` is published with a `deliverAt` under `due`: the ordered ones are not (their figures are the order check's). */
export const hasDeliverAt = (n: number, orderedKeys: number | undefined): boolean => orderOf(n, orderedKeys ?? 0) === undefined;

/**
 * When callback `n` is published, from the start: evenly over `spreadMs`, except that with `due` an
 * ordered one goes out at its due time, without a `deliverAt` (a producer that publishes it when it
 * happens): published at once, its key would be delivered before the first fault.
 */
function publishAt(options: LoadOptions, n: number): number {
  if (options.due && !hasDeliverAt(n, options.orderedKeys)) return dueAt(options.due, 0, n, options.callbacks);
  return (n * options.spreadMs) / options.callbacks;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Publishes `callbacks` callbacks through the library's confirmed publisher at a steady pace. A
 * publish that fails (timeout, channel closed during a broker restart) is retried with the same id
 * until confirmed, exactly what a careful producer does.
 */
export function startLoad(options: LoadOptions): { stats: LoadStats; done: Promise<LoadStats>; startedAt: number } {
  const config = loadConfig({
    AMQP_URL: options.amqpUrl,
    TOPOLOGY_PREFIX: options.prefix,
    DELAY_MODE: options.mode,
    PUBLISH_TIMEOUT: '20s',
    PUBLISH_BUFFER_LIMIT: '2000',
    LOG_LEVEL: 'error',
  });
  const publisher = createPublisher(config, createLogger('error', 'chaos-producer'));
  const stats: LoadStats = {
    confirmed: 0,
    republished: 0,
    republishedIds: new Set(),
    unconfirmed: [],
    errors: {},
    cancelled: new Set(),
    cancelTicks: new Map(),
  };
  /** Each ordered key's last publish: the next one of the key starts once it has ended. */
  const keyTails = new Map<string, Promise<void>>();
  const inFlight = new Set<Promise<void>>();
  const started = Date.now();

  /** Cancels `id` after `delayMs`, trying again through chaos like a publish; counted once confirmed. */
  async function cancelLater(id: string, delayMs: number, deadline: number): Promise<void> {
    await sleep(delayMs);
    stats.cancelTicks.set(id, options.ledger.tick());
    for (let tries = 0; Date.now() < deadline + delayMs; tries += 1) {
      try {
        await publisher.cancel(id);
        stats.cancelled.add(id);
        return;
      } catch (error) {
        const code = isRelayError(error) ? error.code : (error as Error).message.slice(0, 60);
        stats.errors[`cancel ${code}`] = (stats.errors[`cancel ${code}`] ?? 0) + 1;
        await sleep(Math.min(5_000, 250 * 2 ** tries));
      }
    }
  }

  /** Publishes callback `n` (and cancels it later, with `--cancel`); `ended` is called once it is confirmed or given up. */
  async function publishOne(n: number, ended: () => void): Promise<void> {
    const id = idOf(options.run, n);
    const order = orderOf(n, options.orderedKeys ?? 0);
    const url = options.ledger.urlFor(fateOf(n), n, order ? `/${order.key}/${order.seq}` : '');
    const callback = order
      ? { id, url, body: { n, fate: fateOf(n), key: order.key, seq: order.seq }, orderKey: order.key }
      : { id, url, body: { n, fate: fateOf(n) } };
    const deadline = Date.now() + options.giveUpMs;
    // A republish keeps the same due time: a careful producer retries the same callback, not a new one.
    const when =
      options.due && hasDeliverAt(n, options.orderedKeys) ? { deliverAt: new Date(dueAt(options.due, started, n, options.callbacks)) } : {};
    for (let tries = 0; ; tries += 1) {
      try {
        await publisher.publish(callback, when);
        stats.confirmed += 1;
        ended();
        if (options.cancelAfterMs !== undefined && fateOf(n) === 'always-fail') await cancelLater(id, options.cancelAfterMs, deadline);
        return;
      } catch (error) {
        const code = isRelayError(error) ? error.code : (error as Error).message.slice(0, 60);
        stats.errors[code] = (stats.errors[code] ?? 0) + 1;
        if (code === 'CR_ERR_INVALID_CALLBACK') throw error; // a bug in this harness, not chaos
        if (Date.now() > deadline) {
          stats.unconfirmed.push(id);
          return;
        }
        // Only a publish that may have reached the broker can leave a second copy behind.
        if (code !== 'CR_ERR_BUFFER_FULL') stats.republishedIds.add(id);
        stats.republished += 1;
        await sleep(Math.min(5_000, 250 * 2 ** tries));
      }
    }
  }

  /** Publishes callbacks `ns` (in their publishAt order), each at its time. */
  async function pace(ns: number[]): Promise<void> {
    for (const n of ns) {
      const due = started + publishAt(options, n);
      if (due > Date.now()) await sleep(due - Date.now());
      // Bounded in-flight publishes: the buffer limit would refuse more anyway.
      while (inFlight.size >= 500) await Promise.race(inFlight);
      // An ordered callback is published once the one before it of its key ended: the order the broker accepts them in is its key's.
      const key = orderOf(n, options.orderedKeys ?? 0)?.key;
      const after = key === undefined ? undefined : keyTails.get(key);
      let ended = (): void => {};
      const publishedOrGivenUp = new Promise<void>((resolve) => (ended = resolve));
      const work = (after ? after.then(() => publishOne(n, ended)) : publishOne(n, ended)).finally(() => {
        ended();
        inFlight.delete(work);
      });
      if (key !== undefined) keyTails.set(key, publishedOrGivenUp);
      inFlight.add(work);
    }
  }

  const done = (async () => {
    try {
      const all = Array.from({ length: options.callbacks }, (_, n) => n);
      // With `due`, the ordered callbacks go out on their own pace beside the others (publishAt).
      const lanes = options.due
        ? [all.filter((n) => hasDeliverAt(n, options.orderedKeys)), all.filter((n) => !hasDeliverAt(n, options.orderedKeys))]
        : [all];
      await Promise.all(lanes.map((ns) => pace(ns)));
      await Promise.all(inFlight);
    } finally {
      await publisher.close();
    }
    return stats;
  })();
  return { stats, done, startedAt: started };
}
