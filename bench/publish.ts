import { loadConfig, type RelayConfig } from '../src/config/load-config.js';
import { createLogger } from '../src/logger.js';
import type { Callback } from '../src/message/callback.js';
import { createPublisher, type CallbackPublisher, type PublishOptions } from '../src/producer/publisher.js';
import { declareOnce } from '../src/topology/connect-topology.js';

export interface Job {
  callback: Callback;
  options?: PublishOptions;
}

/**
 * The library's publisher on `prefix`, silent, with room for the concurrency the bench uses. Publishers
 * declare nothing: the topology is declared first, as `callback-relay topology` does in a deployment,
 * and every publish (and `connected()`) waits for that.
 */
export function benchPublisher(
  url: string,
  prefix: string,
  env: Record<string, string> = {},
): { config: RelayConfig; publisher: CallbackPublisher } {
  const config = loadConfig({
    AMQP_URL: url,
    TOPOLOGY_PREFIX: prefix,
    LOG_LEVEL: 'silent',
    METRICS_PORT: '0',
    PUBLISH_BUFFER_LIMIT: '5000',
    PUBLISH_TIMEOUT: '60s',
    ...env,
  });
  const declared = declareOnce(config, createLogger('silent'));
  let ready = false;
  declared.then(
    () => (ready = true),
    () => {},
  );
  const inner = createPublisher(config, createLogger('silent'));
  const publisher: CallbackPublisher = {
    publish: async (callback, options) => {
      await declared;
      return inner.publish(callback, options);
    },
    cancel: async (id) => {
      await declared;
      return inner.cancel(id);
    },
    connected: () => ready && inner.connected(),
    close: () => inner.close(),
  };
  return { config, publisher };
}

export interface PublishReport {
  count: number;
  seconds: number;
  /** Confirmed publishes per second. */
  rate: number;
}

/** Publishes `count` jobs as fast as the broker confirms them, `concurrency` unconfirmed at a time. */
export async function publishAll(
  publisher: CallbackPublisher,
  count: number,
  job: (i: number) => Job,
  concurrency = 200,
): Promise<PublishReport> {
  const started = performance.now();
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      const { callback, options } = job(next++);
      await publisher.publish(callback, options);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  const seconds = (performance.now() - started) / 1000;
  return { count, seconds, rate: count / seconds };
}

/**
 * Publishes `count` jobs at `rate` per second, on schedule: job i is published at i / rate s, whatever
 * the confirms of earlier ones are doing (at most `maxInFlight` unconfirmed; beyond that it falls behind).
 */
export async function publishPaced(
  publisher: CallbackPublisher,
  count: number,
  rate: number,
  job: (i: number) => Job,
  maxInFlight = 2000,
): Promise<PublishReport & { behindMs: number }> {
  const started = performance.now();
  let next = 0;
  let inFlight = 0;
  let behindMs = 0;
  const pending = new Set<Promise<unknown>>();
  while (next < count) {
    const due = Math.min(count, Math.floor(((performance.now() - started) / 1000) * rate) + 1);
    while (next < due && inFlight < maxInFlight) {
      behindMs = Math.max(behindMs, performance.now() - started - (next / rate) * 1000);
      const { callback, options } = job(next++);
      inFlight += 1;
      const publish = publisher.publish(callback, options).finally(() => {
        inFlight -= 1;
        pending.delete(publish);
      });
      pending.add(publish);
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  await Promise.all(pending);
  const seconds = (performance.now() - started) / 1000;
  return { count, seconds, rate: count / seconds, behindMs };
}
