import amqp, { type AmqpConnectionManager, type ChannelWrapper } from 'amqp-connection-manager';
import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { RelayConfig } from '../config/load-config.js';
import type { Logger } from '../logger.js';
import type { Random } from '../policy/jitter.js';
import { connectTopology } from '../topology/connect-topology.js';
import { applyTopology } from '../topology/declare-once.js';
import { sleep } from '../util/with-timeout.js';
import type { Server } from 'node:http';
import { startMetricsServer } from '../metrics/metrics-server.js';
import type { Lane } from './admit.js';
import { buildPipeline, isolationPolicy } from './build-pipeline.js';
import { createDueMover, type DueMover } from './move-due.js';
import { createRelayMetrics } from '../metrics/relay-metrics.js';
import { TargetIsolation } from '../policy/target-isolation.js';
import { amqpUrls } from '../config/amqp-urls.js';
import { parseCidrList } from '../http/address-policy.js';
import { createGuardedAgent } from '../http/guarded-agent.js';

export { isolationPolicy } from './build-pipeline.js';

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
  /** Connected to the broker and consuming (what `/readyz` reports). */
  readonly ready: boolean;
  /** The port `/metrics`, `/healthz` and `/readyz` listen on, once started (undefined when METRICS_PORT=0). */
  readonly metricsPort: number | undefined;
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
  const agent = createGuardedAgent({
    timeoutMs: config.httpTimeout,
    policy: { strict: config.targetPolicy === 'strict', allow: parseCidrList(config.targetAllow, 'TARGET_ALLOW'), deny: parseCidrList(config.targetDeny, 'TARGET_DENY') },
  });
  let manager: AmqpConnectionManager | undefined;
  let channel: ChannelWrapper | undefined;
  let consumers: { channel: ConfirmChannel; tags: string[] } | undefined;
  let stopping = false;
  let ready = false;
  let server: Server | undefined;
  let dueMover: DueMover | undefined;
  const isolation = config.isolation === 'on' ? new TargetIsolation(isolationPolicy(config)) : undefined;
  const metrics = createRelayMetrics(config.successBody, () => isolation);

  async function start(): Promise<void> {
    // Probes answer from the start: alive while waiting for the broker, ready only once consuming.
    if (config.metricsPort > 0) server = await startMetricsServer(config.metricsPort, metrics.registry, { ready: () => ready });
    const topology = await connectTopology(config, logger, abort.signal);
    await applyTopology(topology.url, topology);
    const { handle, events } = buildPipeline(config, topology, agent, logger, clock, deps.random ?? Math.random, metrics.observer, isolation);
    const onMessage = (message: ConsumeMessage | null, ch: ConfirmChannel, lane: Lane): void => {
      if (message === null) {
        logger.error({ lane }, 'the broker cancelled the consumer (queue deleted?)');
        return;
      }
      const work = handle(message, ch, lane).catch((error: Error) =>
        logger.warn({ err: error.message }, 'could not settle a message; the broker will redeliver it'),
      );
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work));
    };
    if (topology.mode === 'plugin') dueMover = createDueMover(topology.names, config.prefetch, logger);
    manager = amqp.connect(amqpUrls(config.amqpUrl), { reconnectTimeInSeconds: 1, heartbeatIntervalInSeconds: 10 });
    manager.on('connect', () => logger.info('connected to the broker'));
    manager.on('disconnect', ({ err }) => {
      ready = false;
      logger.warn({ err: err?.message }, 'disconnected from the broker; reconnecting');
    });
    channel = manager.createChannel({
      confirm: true,
      setup: async (ch: ConfirmChannel) => {
        await topology.declare(ch);
        if (stopping) return;
        // Events go on a channel of their own without confirms: best effort by design, and not a
        // confirm per callback for the broker to track on the channel that settles.
        const eventsChannel = events ? await manager?.connection?.createChannel() : undefined;
        if (eventsChannel) {
          eventsChannel.on('error', () => {});
          events?.attach(eventsChannel);
        }
        // basic.qos without `global` limits each consumer started after it on this channel:
        // https://www.rabbitmq.com/docs/consumer-prefetch
        await ch.prefetch(config.prefetch);
        const main = await ch.consume(topology.names.workQueue, (message) => onMessage(message, ch, 'main'), { noAck: false });
        await ch.prefetch(config.slowPrefetch);
        const slow = await ch.consume(topology.names.slowQueue, (message) => onMessage(message, ch, 'slow'), { noAck: false });
        consumers = { channel: ch, tags: [main.consumerTag, slow.consumerTag] };
        if (manager?.connection) dueMover?.attach(manager.connection);
        ready = true;
        logger.info({ queue: topology.names.workQueue, prefetch: config.prefetch, slowPrefetch: config.slowPrefetch, isolation: config.isolation }, 'consuming');
      },
    });
    channel.on('error', (error: Error & { code?: string }) => logger.error({ err: error.message, code: error.code }, 'channel setup failed'));
    await channel.waitForConnect();
  }

  async function stop(): Promise<void> {
    if (stopping) return;
    stopping = true;
    ready = false;
    abort.abort();
    for (const tag of consumers?.tags ?? []) await consumers?.channel.cancel(tag).catch(() => {});
    await dueMover?.close();
    const drained = Promise.allSettled([...inFlight]).then(() => true);
    const finished = await Promise.race([drained, sleep(config.drainTimeout).then(() => false)]);
    if (!finished) logger.warn({ unfinished: inFlight.size }, 'drain timeout: unfinished deliveries return to the queue');
    await channel?.close().catch(() => {});
    await manager?.close().catch(() => {});
    await agent.close().catch(() => {});
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    logger.info('worker stopped');
  }

  return {
    start,
    stop,
    get inFlight() {
      return inFlight.size;
    },
    get ready() {
      return ready;
    },
    get metricsPort() {
      const address = server?.address();
      return typeof address === 'object' && address ? address.port : undefined;
    },
  };
}
