import type { AmqpConnectionManager, ChannelWrapper } from 'amqp-connection-manager';
import { connectManager, openChannelWithin } from '../amqp/connect.js';
import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { Server } from 'node:http';
import type { Agent } from 'undici';
import { amqpUrls } from '../config/amqp-urls.js';
import type { RelayConfig } from '../config/load-config.js';
import { createOutcomeEvents } from '../events/outcome-events.js';
import { ArrivalOrder } from '../isolation/scheduler.js';
import { TargetIsolation } from '../isolation/target-isolation.js';
import type { Logger } from '../logger.js';
import { startMetricsServer } from '../metrics/metrics-server.js';
import { createRelayMetrics } from '../metrics/relay-metrics.js';
import type { Random } from '../policy/jitter.js';
import { createRedeclare } from '../topology/connect-topology.js';
import { ORDERED_LOG_RENEW_AFTER_MS } from '../topology/declare-ordered.js';
import { loadTracing, type Tracing } from '../tracing/tracing.js';
import { dueAtOf } from './decode.js';
import { createDueHold, giveBackHeld, HOLD_PREFETCH } from './hold-until-due.js';
import { createLaneChannels } from './lane-channels.js';
import { withTimeout } from '../util/with-timeout.js';
import { createDueMover, type DueMover } from './move-due.js';
import { observeAll } from '../reports.js';
import { createPipeline, type Job, type Lane } from './pipeline.js';
import { pipelineContext } from './pipeline-parts.js';
import { resolveWorkerSettings } from './worker-settings.js';
import { createInFlight, drainAndClose } from './worker-stop.js';
import { startControlReader, type ControlReader } from '../control/control-reader.js';
import type { OrderedKeys } from './ordered-keys.js';
import type { FleetPresence } from '../control/fleet-presence.js';
import { declareAtStart, deliveryAgent, orderedShards, startLimits, startSteps } from './worker-start.js';

/** How often a worker knocks on every ordered shard (ordered-keys.ts wakeAll). */
const WAKE_EVERY_MS = 30_000;
/** How long a stopping worker waits for its last knock's confirms. */
const HAND_OVER_KNOCK_MS = 2_000;
/** How long a reconnect's setup waits for each extra channel it declares bindings on. */
const SETUP_CHANNEL_OPEN_MS = 5_000;

export interface WorkerDeps {
  /** Wall clock in ms; default `Date.now`. */
  clock?: () => number;
  /** Jitter source; default `Math.random`. */
  random?: Random;
  /** Spans per attempt; default: the OpenTelemetry SDK when OTEL_EXPORTER_OTLP_ENDPOINT is set (tracing.ts). */
  tracing?: Promise<Tracing | undefined>;
  /** After how long the ordered shards' log records are written again; default ORDERED_LOG_RENEW_AFTER_MS. */
  orderedLogRenewAfterMs?: number;
}

export interface Worker {
  /** Connects, declares the topology and starts consuming; resolves once consuming. */
  start(): Promise<void>;
  /**
   * Stops consuming, gives back at once what waited for a slot or its due time, lets in-flight
   * deliveries (and the settles, moves and holds under way) finish within DRAIN_TIMEOUT, then closes.
   */
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
 * then consumes each queue on a confirm channel of its own (lane-channels.ts), replayed on every
 * reconnect. Each message is settled on the channel it came from; after a reconnect the broker has
 * already requeued those, so they are never acked on the new one.
 */
export function createWorker(config: RelayConfig, logger: Logger, deps: WorkerDeps = {}): Worker {
  const settings = resolveWorkerSettings(config);
  const { consume } = settings;
  const clock = deps.clock ?? Date.now;
  const abort = new AbortController();
  /** Messages handed to the pipeline and not settled yet: what the stop drains. */
  const inFlight = createInFlight();
  let agent: Agent | undefined;
  let manager: AmqpConnectionManager | undefined;
  let channel: ChannelWrapper | undefined;
  let stopping = false;
  let ready = false;
  /** A reconnect for a cancelled consumer is under way: further cancels of the old channel are the same event. */
  let recycling = false;
  let server: Server | undefined;
  let dueMover: DueMover | undefined;
  let control: ControlReader | undefined;
  let presence: FleetPresence | undefined;
  let pipeline: ReturnType<typeof createPipeline> | undefined;
  let orderedKeys: OrderedKeys | undefined;
  let wakes: NodeJS.Timeout | undefined;
  /** Knocks on every ordered shard, on the latest setup's channel. */
  let knock: (() => Promise<void>) | undefined;
  // From now on this worker sees its targets' results: what it knows of their successes starts here.
  const isolation = settings.isolation && new TargetIsolation<Job>(settings.isolation, clock());
  const metrics = createRelayMetrics(
    () => isolation,
    () => orderedKeys,
  );
  const tracing = 'tracing' in deps ? deps.tracing : loadTracing(logger);
  /** Queues mode: messages the levels let out early wait here, unacked, until due (hold-until-due.ts). */
  const dueHold = createDueHold<ConfirmChannel>(clock);
  let onMessage: (message: ConsumeMessage | null, ch: ConfirmChannel, lane: Lane) => void = () => {};
  const lanes = createLaneChannels({
    onMessage: (message, ch, lane) => onMessage(message, ch, lane),
    closed: (ch) => {
      // Unacked messages of a closed channel are back in their queues: jobs still waiting for a
      // slot must not be attempted, nor held ones released or given back (another worker may have them already).
      dueHold.channelClosed(ch);
      pipeline?.channelClosed(ch);
      if (!stopping) metrics.laneChannelClosed();
    },
    stopping: () => stopping,
    closeOnStop: (lane) => orderedKeys?.isOrdered(lane) ?? false,
    redeclare: () => redeclare?.() ?? Promise.resolve(),
    logger,
  });
  let redeclare: (() => Promise<void>) | undefined;
  /** Connected, set up, and every queue's consumer in place (a lane being opened again is not ready). */
  const isReady = (): boolean => ready && lanes.consuming();

  async function start(): Promise<void> {
    // Probes answer from the start: alive while waiting for the broker, ready only once consuming.
    if (consume.metricsPort > 0) {
      server = await startMetricsServer(consume.metricsPort, consume.metricsHost, metrics.registry, { ready: isReady });
      const address = server.address();
      if (typeof address === 'object' && address) logger.info({ host: address.address, port: address.port }, 'metrics listening');
    }
    // How long each step of the start took, logged with "consuming": a slow start names its step.
    const steps = startSteps(clock);
    const topology = await declareAtStart(config, logger, abort.signal);
    redeclare = createRedeclare(topology, settings.publishTimeoutMs);
    steps.done('topologyMs');
    // A stop during start: open nothing more (stop() closes what exists).
    if (stopping) return;
    agent = await deliveryAgent(config.amqpUrl, settings, logger);
    const events = settings.events === 'on' ? createOutcomeEvents(topology.names.eventsExchange, clock) : undefined;
    const observer = events ? observeAll([metrics.observer, events]) : metrics.observer;
    // Cancels and pauses: read P.control up to the present before the first message is consumed.
    control = await startControlReader({
      urls: amqpUrls(config.amqpUrl),
      names: topology.names,
      logger,
      clock,
      moveHeld: { timeoutMs: settings.publishTimeoutMs },
    });
    if (stopping) return void (await control.close());
    steps.done('controlMs');
    presence = await startLimits(isolation, {
      urls: amqpUrls(config.amqpUrl),
      names: topology.names,
      control,
      targetLimits: settings.targetLimits,
      targetKey: settings.targetKey,
      clock,
      logger,
      changed: () => pipeline?.limitsChanged(),
    });
    // A stop during the start closed the control reader but found no presence yet.
    if (stopping) return void (await presence?.close());
    if (presence) steps.done('presenceMs');
    // Each queue's consumer window (prefetch); queues mode: room on top for the messages held until due, which take no delivery slot.
    const window = consume.queuePrefetch + (topology.mode === 'queues' ? HOLD_PREFETCH : 0);
    // A lane flows while its window keeps room for what queues behind: half of it, and at least a worker's slots (PREFETCH).
    const line = window - Math.max(consume.prefetch, Math.ceil(window / 2));
    const laneExcess = (lane: Lane): number => lanes.unsettled(lane) - line;
    const { ordered, lanes: orderedLanes } = orderedShards(topology, consume.orderedPrefetch, {
      connection: () => manager?.connection,
      run: (job) => pipeline?.admit(job),
      logger,
      clock,
      publishTimeoutMs: settings.publishTimeoutMs,
      stopOnDead: config.orderedOnDead === 'stop',
      renewAfterMs: deps.orderedLogRenewAfterMs ?? ORDERED_LOG_RENEW_AFTER_MS,
    });
    orderedKeys = ordered;
    pipeline = createPipeline(
      pipelineContext(settings, {
        topology,
        dispatcher: agent,
        scheduler: isolation ?? new ArrivalOrder(consume.prefetch),
        control,
        observer,
        tracing: await tracing,
        clock,
        random: deps.random ?? Math.random,
        logger,
        redeclare,
        laneExcess,
        ordered,
      }),
    );
    const { handle, shareHealth } = pipeline;
    control.onHealth(shareHealth);
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
    onMessage = (message: ConsumeMessage | null, ch: ConfirmChannel, lane: Lane): void => {
      if (message === null) return consumerCancelled(lane);
      // A count, not a set of promises: one promise and one callback per message, whatever its fate.
      const release = (): void => {
        inFlight.add();
        handle(message, ch, lane).then(inFlight.settled, (error: Error) => {
          logger.warn({ err: error.message }, 'could not settle a message; the broker will redeliver it');
          inFlight.settled();
        });
      };
      // An ordered shard's message is not given back: it returns when the shard's channel closes (pipeline.ts `giveBack`).
      const giveBack = (): void => {
        if (!orderedKeys?.isOrdered(lane)) giveBackHeld(ch, message);
      };
      dueHold.hold(dueAtOf(message.properties.headers), ch, release, giveBack);
    };
    if (topology.mode === 'plugin') dueMover = createDueMover(topology.names, consume.duePrefetch, logger, redeclare);
    let declaredAtStart = true;
    manager = connectManager(config.amqpUrl);
    manager.on('connect', () => {
      // Registered before the channel's own listener, so this runs before the setup consumes again.
      recycling = false;
      logger.info('connected to the broker');
    });
    manager.on('disconnect', ({ err }) => {
      ready = false;
      // The knocks need a channel: the next setup starts them again.
      clearInterval(wakes);
      logger.warn({ err: err?.message }, 'disconnected from the broker; reconnecting');
    });
    channel = manager.createChannel({
      confirm: true,
      setup: async (ch: ConfirmChannel) => {
        // The start declared the topology moments ago (in parallel; in queues mode with 8 lanes about
        // 2,000 declarations, 0.2–0.3 s on 4.3 even when all exist), so the first setup does not declare it again; every
        // later one does, its bindings over channels opened within a bound (one alone took about a minute
        // while a cluster restarted a node): a setup waiting on a connection being cut must not wait forever.
        if (declaredAtStart) declaredAtStart = false;
        else {
          const connection = manager?.connection;
          await topology.declare(ch, connection ? () => openChannelWithin(connection, SETUP_CHANNEL_OPEN_MS) : undefined);
        }
        if (stopping) return;
        // Events go on a channel of their own without confirms: best effort by design, and not a
        // confirm per callback for the broker to track on the channel that settles.
        const eventsChannel = events ? await manager?.connection?.createChannel() : undefined;
        if (eventsChannel) {
          eventsChannel.on('error', () => {});
          events?.attach(eventsChannel);
        }
        // basic.qos without `global` limits each consumer started after it on its channel, so each
        // queue may hold the prefetch and a target alone in its lane can fill every slot:
        // https://www.rabbitmq.com/docs/consumer-prefetch
        const connection = manager?.connection;
        if (!connection) throw new Error('the connection closed during the setup');
        // P.slow holds no message until due (what moves there was due already), so it gets no room for
        // holds: with it, the first worker up could take 500 of a busy backlog there while its siblings started.
        await lanes.open(
          connection,
          [
            ...topology.names.workQueues.map((queue, lane): [string, Lane] => [queue, String(lane)]),
            [topology.names.slowQueue, 'slow', consume.queuePrefetch],
            ...orderedLanes,
          ],
          window,
        );
        // Plugin mode: messages whose delay ended are moved from P.due into their lanes (move-due.ts).
        if (manager?.connection) dueMover?.attach(manager.connection);
        // A knock on every ordered shard now and then: its active consumer takes it over (ordered-keys.ts wakeAll).
        knock = () => orderedKeys?.wakeAll(ch) ?? Promise.resolve();
        const wake = (): void =>
          void knock?.().catch((error: Error) => logger.warn({ err: error.message }, 'could not wake the ordered shards'));
        clearInterval(wakes);
        wakes = setInterval(wake, WAKE_EVERY_MS).unref();
        wake();
        ready = true;
        logger.info(
          {
            lanes: topology.names.workQueues.length,
            prefetch: consume.prefetch,
            isolation: isolation ? 'on' : 'off',
            start: steps.last('consumeMs'),
          },
          'consuming',
        );
      },
    });
    channel.on('error', (error: Error & { code?: string }) =>
      logger.error({ err: error.message, code: error.code }, 'channel setup failed'),
    );
    await channel.waitForConnect();
  }

  async function stop(): Promise<void> {
    if (stopping) return;
    stopping = true;
    ready = false;
    clearInterval(wakes);
    abort.abort();
    await drainAndClose(
      { lanes, dueHold, inFlight, pipeline: () => pipeline, dueMover: () => dueMover, closeAll },
      consume.drainTimeoutMs,
      logger,
    );
  }

  /** Closes the broker side in the order the acks need (lanes, their last acks flushed, first) and, beside it, the local side. */
  async function closeAll(): Promise<void> {
    const broker = async (): Promise<void> => {
      // The close below hands the ordered shards to their next consumers; a knock makes those take them
      // over at once, not at their next one (WAKE_EVERY_MS), when a shard's keys wait only in its log.
      // Beside the close, not before it: the last acks must not wait for its confirms.
      const knocked = withTimeout(knock?.() ?? Promise.resolve(), HAND_OVER_KNOCK_MS, () => new Error('knock')).catch(() => {});
      await lanes.close();
      await knocked;
      await orderedKeys?.close();
      await channel?.close().catch(() => {});
      await manager?.close().catch(() => {});
      await presence?.close();
      await control?.close();
    };
    const local = async (): Promise<void> => {
      await agent?.close().catch(() => {});
      await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
      await (await tracing)?.shutdown().catch(() => {});
    };
    await Promise.all([broker(), local()]);
  }

  return {
    start,
    stop,
    get inFlight() {
      return inFlight.count;
    },
    get ready() {
      return isReady();
    },
    get metricsPort() {
      const address = server?.address();
      return typeof address === 'object' && address ? address.port : undefined;
    },
  };
}
