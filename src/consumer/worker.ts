import amqp, { type AmqpConnectionManager, type ChannelWrapper } from 'amqp-connection-manager';
import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { RelayConfig } from '../config/load-config.js';
import type { Logger } from '../logger.js';
import type { Random } from '../policy/jitter.js';
import { connectTopology } from '../topology/connect-topology.js';
import { applyTopology } from '../topology/declare-once.js';
import { sleep } from '../util/with-timeout.js';
import { createDecider } from './decide.js';
import { createHttpAgent } from './deliver.js';
import { createMessageHandler } from './handle-message.js';

export interface WorkerDeps {
  /** Wall clock in ms; default `Date.now`. */
  clock?: () => number;
  /** Jitter source; default `Math.random`. */
  random?: Random;
}

export interface Worker {
  /** Connects, declares the topology and starts consuming; resolves once consuming. */
  start(): Promise<void>;
  /** Stops consuming, lets in-flight deliveries finish within DRAIN_TIMEOUT, then closes. */
  stop(): Promise<void>;
  /** Deliveries in progress. */
  readonly inFlight: number;
}

/**
 * A worker: one reconnecting connection, one confirm channel whose setup declares the topology and
 * starts the consumer, replayed on every reconnect. Each message is settled on the channel it came
 * from; after a reconnect the broker has already requeued those, so they are never acked on the new one.
 */
export function createWorker(config: RelayConfig, logger: Logger, deps: WorkerDeps = {}): Worker {
  const clock = deps.clock ?? Date.now;
  const abort = new AbortController();
  const inFlight = new Set<Promise<void>>();
  const agent = createHttpAgent(config.httpTimeout);
  let manager: AmqpConnectionManager | undefined;
  let channel: ChannelWrapper | undefined;
  let consumer: { channel: ConfirmChannel; tag: string } | undefined;
  let stopping = false;

  async function start(): Promise<void> {
    const topology = await connectTopology(config, logger, abort.signal);
    await applyTopology(config.amqpUrl, topology);
    const handle = createMessageHandler({
      names: topology.names,
      mode: topology.mode,
      maxPayloadBytes: config.maxPayloadBytes,
      deliverOptions: { timeoutMs: config.httpTimeout, responseBodyLimit: config.responseBodyLimit, keepBody: config.successBody !== '', dispatcher: agent },
      decide: createDecider(
        { schedule: config.retrySchedule, maxAttempts: config.maxAttempts, jitter: config.retryJitter, retryAfterMaxMs: config.retryAfterMax, successBody: config.successBody },
        clock,
        deps.random ?? Math.random,
      ),
      clock,
      logger,
    });
    const onMessage = (message: ConsumeMessage | null, ch: ConfirmChannel): void => {
      if (message === null) {
        logger.error({ queue: topology.names.workQueue }, 'the broker cancelled the consumer (queue deleted?)');
        return;
      }
      const work = handle(message, ch).catch((error: Error) =>
        logger.warn({ err: error.message }, 'could not settle a message; the broker will redeliver it'),
      );
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work));
    };
    manager = amqp.connect([config.amqpUrl], { reconnectTimeInSeconds: 1, heartbeatIntervalInSeconds: 10 });
    manager.on('connect', () => logger.info('connected to the broker'));
    manager.on('disconnect', ({ err }) => logger.warn({ err: err?.message }, 'disconnected from the broker; reconnecting'));
    channel = manager.createChannel({
      confirm: true,
      setup: async (ch: ConfirmChannel) => {
        await topology.declare(ch);
        if (stopping) return;
        await ch.prefetch(config.prefetch);
        const { consumerTag } = await ch.consume(topology.names.workQueue, (message) => onMessage(message, ch), { noAck: false });
        consumer = { channel: ch, tag: consumerTag };
        logger.info({ queue: topology.names.workQueue, prefetch: config.prefetch }, 'consuming');
      },
    });
    channel.on('error', (error: Error & { code?: string }) => logger.error({ err: error.message, code: error.code }, 'channel setup failed'));
    await channel.waitForConnect();
  }

  async function stop(): Promise<void> {
    if (stopping) return;
    stopping = true;
    abort.abort();
    if (consumer) await consumer.channel.cancel(consumer.tag).catch(() => {});
    const drained = Promise.allSettled([...inFlight]).then(() => true);
    const finished = await Promise.race([drained, sleep(config.drainTimeout).then(() => false)]);
    if (!finished) logger.warn({ unfinished: inFlight.size }, 'drain timeout: unfinished deliveries return to the queue');
    await channel?.close().catch(() => {});
    await manager?.close().catch(() => {});
    await agent.close().catch(() => {});
    logger.info('worker stopped');
  }

  return {
    start,
    stop,
    get inFlight() {
      return inFlight.size;
    },
  };
}
