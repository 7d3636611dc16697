import amqp, { type ChannelWrapper } from 'amqp-connection-manager';
import { amqpUrls } from '../config/amqp-urls.js';
import { loadConfig, type RelayConfig } from '../config/load-config.js';
import { formatDuration } from '../config/duration.js';
import { RelayError, isRelayError } from '../errors.js';
import { createLogger, type Logger } from '../logger.js';
import type { Callback } from '../message/callback.js';
import { connectTopology, type ResolvedTopology } from '../topology/connect-topology.js';
import { MAX_LEVEL_DELAY_MS } from '../topology/delay-levels.js';
import { declareDueQueueAside } from '../topology/declare-due-queue.js';
import { deliveryRoute } from '../topology/delay-route.js';
import { withTimeout } from '../util/with-timeout.js';
import { encodeCallback } from './encode-callback.js';

export interface PublishOptions {
  /** Delay before the first attempt, in ms. Default 0. At most 2^22 − 1 s (48.5 days). */
  delay?: number;
  /** Alternative to `delay`: the first attempt's time. A past time means now. */
  deliverAt?: Date;
}

export interface CallbackPublisher {
  /**
   * Validates, publishes and resolves with the callback's id once the broker has confirmed it.
   * Rejects with `CR_ERR_INVALID_CALLBACK` (nothing published), `CR_ERR_BUFFER_FULL`,
   * `CR_ERR_PUBLISH_TIMEOUT`, `CR_ERR_PUBLISH_NACKED` or `CR_ERR_CLOSED`.
   */
  publish(callback: Callback, options?: PublishOptions): Promise<{ id: string }>;
  /** Stops accepting publishes and closes the connection. */
  close(): Promise<void>;
}

/**
 * A publisher on its own reconnecting connection. It declares the topology too, so a callback
 * published before any worker has started is queued, not dropped as unroutable.
 */
export function createPublisher(config: RelayConfig = loadConfig(), logger: Logger = createLogger(config.logLevel, 'callback-relay-producer')): CallbackPublisher {
  const abort = new AbortController();
  const topology = connectTopology(config, logger, abort.signal);
  topology.catch(() => {});
  const manager = amqp.connect(amqpUrls(config.amqpUrl), { reconnectTimeInSeconds: 1, heartbeatIntervalInSeconds: 10 });
  manager.on('disconnect', ({ err }) => logger.warn({ err: err?.message }, 'producer disconnected from the broker'));
  const channel: ChannelWrapper = manager.createChannel({
    confirm: true,
    setup: async (ch: Parameters<ResolvedTopology['declare']>[0]) => {
      const { declare, mode, names } = await topology;
      await declare(ch);
      if (mode === 'plugin' && manager.connection) void declareDueQueueAside(manager.connection, names);
    },
  });
  channel.on('error', (err) => logger.error({ err: (err as Error).message, code: (err as RelayError).code }, 'producer channel setup failed'));
  let pending = 0;
  let closed = false;

  async function publish(callback: Callback, options: PublishOptions = {}): Promise<{ id: string }> {
    if (closed) throw new RelayError('CR_ERR_CLOSED', 'the publisher is closed');
    const { id, content } = encodeCallback(callback, config.maxPayloadBytes);
    const delayMs = firstAttemptDelay(options, Date.now());
    if (pending >= config.publishBufferLimit) {
      throw new RelayError('CR_ERR_BUFFER_FULL', `${pending} publishes are already waiting for the broker (PUBLISH_BUFFER_LIMIT=${config.publishBufferLimit}); nothing was published`);
    }
    pending += 1;
    const deadline = Date.now() + config.publishTimeout;
    try {
      const { names, mode } = await withTimeout(topology, config.publishTimeout, () => timeoutError(config.publishTimeout));
      const route = deliveryRoute(names, mode, delayMs);
      await channel.publish(route.exchange, route.routingKey, content, {
        persistent: true,
        contentType: 'application/json',
        messageId: id,
        timestamp: Math.floor(Date.now() / 1000),
        headers: route.headers,
        timeout: Math.max(1, deadline - Date.now()),
      });
      return { id };
    } catch (error) {
      throw publishError(error, config.publishTimeout);
    } finally {
      pending -= 1;
    }
  }

  async function close(): Promise<void> {
    closed = true;
    abort.abort();
    await channel.close().catch(() => {});
    await manager.close().catch(() => {});
  }

  return { publish, close };
}

/** The first-attempt delay in ms from `delay` or `deliverAt`, or a `CR_ERR_INVALID_CALLBACK` naming the option. */
export function firstAttemptDelay(options: PublishOptions, nowMs: number): number {
  if (options.delay !== undefined && options.deliverAt !== undefined) {
    throw new RelayError('CR_ERR_INVALID_CALLBACK', 'delay: give either delay or deliverAt, not both', { field: 'delay' });
  }
  let delayMs = 0;
  let field = 'delay';
  if (options.deliverAt !== undefined) {
    field = 'deliverAt';
    if (!(options.deliverAt instanceof Date) || Number.isNaN(options.deliverAt.getTime())) {
      throw new RelayError('CR_ERR_INVALID_CALLBACK', 'deliverAt: must be a valid Date', { field });
    }
    delayMs = Math.max(0, options.deliverAt.getTime() - nowMs);
  } else if (options.delay !== undefined) {
    if (!Number.isFinite(options.delay) || options.delay < 0) {
      throw new RelayError('CR_ERR_INVALID_CALLBACK', `delay: must be a non-negative number of ms, got ${options.delay}`, { field });
    }
    delayMs = options.delay;
  }
  if (delayMs > MAX_LEVEL_DELAY_MS) {
    throw new RelayError('CR_ERR_INVALID_CALLBACK', `${field}: at most ${formatDuration(MAX_LEVEL_DELAY_MS)} ahead`, { field });
  }
  return delayMs;
}

const timeoutError = (ms: number): RelayError =>
  new RelayError(
    'CR_ERR_PUBLISH_TIMEOUT',
    `the broker did not confirm within ${formatDuration(ms)} (PUBLISH_TIMEOUT); it may be unreachable. The callback may or may not be queued: publish again with the same id`,
  );

function publishError(error: unknown, timeoutMs: number): Error {
  if (isRelayError(error)) return error;
  const message = (error as Error).message ?? String(error);
  if (message === 'timeout') return timeoutError(timeoutMs);
  if (/nack/i.test(message)) return new RelayError('CR_ERR_PUBLISH_NACKED', `the broker refused the callback: ${message}`, { cause: error });
  if (/closed/i.test(message)) return new RelayError('CR_ERR_CLOSED', `the channel closed before the broker confirmed: ${message}`, { cause: error });
  return error as Error;
}
