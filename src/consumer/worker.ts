import type { AmqpConnectionManager, ChannelWrapper } from 'amqp-connection-manager';
import { connectManager } from '../amqp/connect.js';
import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { RelayConfig } from '../config/load-config.js';
import type { Logger } from '../logger.js';
import type { Random } from '../policy/jitter.js';
import { connectTopology } from '../topology/connect-topology.js';
import { applyTopology } from '../topology/declare-once.js';
import { sleep } from '../util/with-timeout.js';
import type { Server } from 'node:http';
import { startMetricsServer } from '../metrics/metrics-server.js';
import type { Job, Lane } from './handle-message.js';
import { buildPipeline, isolationPolicy } from './build-pipeline.js';
import { createDueMover, type DueMover } from './move-due.js';
import { createRelayMetrics } from '../metrics/relay-metrics.js';
import { TargetIsolation } from '../isolation/target-isolation.js';
import { parseCidrList } from '../http/address-policy.js';
import { createGuardedAgent } from '../http/guarded-agent.js';
import { loadTracing, type Tracing } from '../tracing/tracing.js';

export { isolationPolicy } from './build-pipeline.js';

export interface WorkerDeps {
  /** Wall clock in ms; default `Date.now`. */
  clock?: () => number;
  /** Jitter source; default `Math.random`. */
  random?: Random;
  /** Spans per attempt; default: the OpenTelemetry SDK when OTEL_EXPORTER_OTLP_ENDPOINT is set (tracing.ts). */
  tracing?: Promise<Tracing | undefined>;
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
  /** A reconnect for a cancelled consumer is under way: further cancels of the old channel are the same event. */
  let recycling = false;
  let server: Server | undefined;
  let dueMover: DueMover | undefined;
  const isolation = config.isolation === 'on' ? new TargetIsolation<Job>(isolationPolicy(config)) : undefined;
  const metrics = createRelayMetrics(config.successBody, () => isolation);
  const tracing = 'tracing' in deps ? deps.tracing : loadTracing(logger);

  async function start(): Promise<void> {
    // Probes answer from the start: alive while waiting for the broker, ready only once consuming.
    if (config.metricsPort > 0) server = await startMetricsServer(config.metricsPort, metrics.registry, { ready: () => ready });
    const topology = await connectTopology(config, logger, abort.signal);
    await applyTopology(topology.url, topology);
    const { handle, channelClosed, events } = buildPipeline(config, topology, agent, logger, clock, deps.random ?? Math.random, metrics.observer, isolation, await tracing);
    // The broker cancelled a consumer (queue deleted, its node gone, a consumer timeout): a worker
    // that keeps the connection but consumes nothing must not look ready. Recycle the connection once;
    // the setup declares the topology again and consumes every queue anew.
    const consumerCancelled = (lane: Lane): void => {
      if (stopping || recycling) return;
      recycling = true;
      ready = false;
      metrics.consumerCancelled();
      logger.error({ lane }, 'the broker cancelled a consumer; reconnecting to consume again');
      manager?.reconnect();
    };
    const onMessage = (message: ConsumeMessage | null, ch: ConfirmChannel, lane: Lane): void => {
      if (message === null) return consumerCancelled(lane);
      const work = handle(message, ch, lane).catch((error: Error) =>
        logger.warn({ err: error.message }, 'could not settle a message; the broker will redeliver it'),
      );
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work));
    };
    if (topology.mode === 'plugin') dueMover = createDueMover(topology.names, config.prefetch, logger);
    manager = connectManager(config.amqpUrl);
    manager.on('connect', () => {
      // Registered before the channel's own listener, so this runs before the setup consumes again.
      recycling = false;
      logger.info('connected to the broker');
    });
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
        // Unacked messages of a closed channel are back in their queues: jobs still waiting for a
        // slot must not be attempted (another worker may have them already).
        ch.once('close', () => channelClosed(ch));
        // basic.qos without `global` limits each consumer started after it on this channel, so each
        // lane may hold PREFETCH messages and a target alone in its lane can fill every slot:
        // https://www.rabbitmq.com/docs/consumer-prefetch
        await ch.prefetch(config.prefetch);
        const tags: string[] = [];
        const queues: [string, Lane][] = [...topology.names.workQueues.map((queue, lane): [string, Lane] => [queue, String(lane)]), [topology.names.slowQueue, 'slow']];
        for (const [queue, lane] of queues) tags.push((await ch.consume(queue, (message) => onMessage(message, ch, lane), { noAck: false })).consumerTag);
        consumers = { channel: ch, tags };
        // Plugin mode: messages whose delay ended are moved from P.due into their lanes (move-due.ts).
        if (manager?.connection) dueMover?.attach(manager.connection);
        ready = true;
        logger.info({ lanes: topology.names.workQueues.length, prefetch: config.prefetch, isolation: config.isolation }, 'consuming');
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
    await (await tracing)?.shutdown().catch(() => {});
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
