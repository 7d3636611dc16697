import type { ChannelWrapper } from 'amqp-connection-manager';
import { connectManager } from '../amqp/connect.js';
import { RETURN_TOKEN_HEADER, returnToken } from '../amqp/publish-confirmed.js';
import { loadConfig, type RelayConfig } from '../config/load-config.js';
import { RelayError, isRelayError } from '../errors.js';
import { createLogger, type Logger } from '../logger.js';
import type { Callback } from '../message/callback.js';
import { replyCode } from '../amqp/broker-errors.js';
import { ACCESS_REFUSED, connectTopology, type ResolvedTopology } from '../topology/connect-topology.js';
import { deliveryRoute, laneBucket, orderedRoute } from '../topology/topology-names.js';
import { readString } from '../message/headers.js';
import { traceHeaders, traceOption, type TraceContext } from '../tracing/trace-context.js';
import { loadTracing, type Tracing } from '../tracing/tracing.js';
import { sleep, withTimeout } from '../util/with-timeout.js';
import { amqpSocket, createWriteCoalescer } from './coalesce-writes.js';
import { encodeCallback } from './encode-callback.js';
import { markerTimeoutError } from '../control/marker-failure.js';
import { cancelMarker, markerName, publishMarker, wrapperChannel } from '../control/publish-markers.js';
import { firstAttemptDelay, type PublishOptions } from './first-attempt-delay.js';
import { orderedPublish, type PublishBucket } from './ordered-publish.js';
import { decidePublishFailure, publishTimeoutError } from './publish-failure.js';
import { TopologyCheck } from './topology-check.js';

export { firstAttemptDelay, type PublishOptions };

export interface CallbackPublisher {
  /**
   * Validates, publishes and resolves with the callback's id once the broker has confirmed it. A
   * callback with an `orderKey` goes to its key's shard (`ordered.<bucket>`, topology-names.ts), and
   * is refused with a first-attempt delay (`CR_ERR_INVALID_CALLBACK`, field `delay` or `deliverAt`). When
   * the connection drops before the confirm, it publishes the callback again (same id) until
   * PUBLISH_TIMEOUT. Rejects with `CR_ERR_INVALID_CALLBACK` (nothing published), `CR_ERR_BUFFER_FULL`,
   * `CR_ERR_CLOSED` (called after close(); nothing published), `CR_ERR_TOPOLOGY_MISSING` (no topology
   * declared on the broker; nothing published), `CR_ERR_PUBLISH_NACKED`,
   * `CR_ERR_PUBLISH_RETURNED` (no queue is bound for it: a half-deleted topology), or, outcome
   * unknown, `CR_ERR_PUBLISH_TIMEOUT` / `CR_ERR_OUTCOME_UNKNOWN` (publish again with the same id).
   */
  publish(callback: Callback, options?: PublishOptions): Promise<{ id: string }>;
  /**
   * Cancels callback `id`: writes a cancel marker to the control stream P.control and resolves once the
   * broker confirmed it. Workers then park the callback in P.dead with reason `canceled` instead of
   * attempting it again; an attempt already in flight finishes (docs/control.md). When the connection
   * drops before the confirm, it publishes the marker again until PUBLISH_TIMEOUT. Rejects with
   * `CR_ERR_INVALID_CALLBACK` (not a callback id; nothing published), `CR_ERR_CLOSED` (called after
   * close()), `CR_ERR_PUBLISH_RETURNED` (the control stream does not exist), `CR_ERR_PUBLISH_NACKED`,
   * or, outcome unknown, `CR_ERR_PUBLISH_TIMEOUT` / `CR_ERR_OUTCOME_UNKNOWN` (cancel it again).
   */
  cancel(id: string): Promise<void>;
  /**
   * Whether a publish goes straight to the broker now: the connection is up, its channel open and the
   * topology found on the broker (a readiness probe; a publish made meanwhile waits for them within its
   * PUBLISH_TIMEOUT).
   */
  connected(): boolean;
  /** Stops accepting publishes, lets those under way settle (each within PUBLISH_TIMEOUT), then closes the connection. */
  close(): Promise<void>;
}

/**
 * A publisher on its own reconnecting connection. It declares nothing: it checks that the topology
 * exists (passive declares, which need no permission) and publishes. Declaring is the job of the
 * workers and of the admin step (`callback-relay topology`); a publish into a prefix without a
 * topology rejects with CR_ERR_TOPOLOGY_MISSING, so a producer's broker account needs no configure
 * right (topology/accounts.ts).
 */
export function createPublisher(
  config: RelayConfig = loadConfig(),
  logger: Logger = createLogger(config.logLevel, 'callback-relay-producer'),
  tracing: Promise<Tracing | undefined> | undefined = loadTracing(logger),
): CallbackPublisher {
  const abort = new AbortController();
  const topology = connectTopology(config, logger, abort.signal);
  // Once known, the topology and the tracer are read directly: a publish then neither waits a turn nor arms a timer for them.
  let resolvedTopology: ResolvedTopology | undefined;
  topology.then((resolved) => (resolvedTopology = resolved)).catch(() => {});
  let tracerKnown = tracing === undefined;
  let knownTracer: Tracing | undefined;
  // A failed load is never cached: every publish awaits it and rejects with its error.
  tracing?.then(
    (tracer) => {
      knownTracer = tracer;
      tracerKnown = true;
    },
    () => {},
  );
  // Every loss of the channel or connection counts: an attempt that saw the count change lost its confirm.
  let losses = 0;
  const manager = connectManager(config.amqpUrl);
  // Known once the topology's names and mode are; passed until the channel or connection goes.
  let check: TopologyCheck | undefined;
  const checkOf = (resolved: ResolvedTopology): TopologyCheck => (check ??= new TopologyCheck(resolved.names, resolved.mode));
  // Set once a channel's setup has run, cleared when the channel or connection goes.
  let channelReady = false;
  manager.on('disconnect', ({ err }) => {
    losses += 1;
    channelReady = false;
    check?.forget();
    logger.warn({ err: err?.message }, 'producer disconnected from the broker');
  });
  // Tokens of mandatory publishes waiting for their confirm, and those the broker returned: it sends
  // basic.return before the confirm of the same message, so a return is known when the confirm arrives.
  const pending = new Set<string>();
  const returned = new Set<string>();
  const channel: ChannelWrapper = manager.createChannel({
    confirm: true,
    setup: async (ch: Parameters<ResolvedTopology['declare']>[0]) => {
      // amqplib fails the unconfirmed publishes of a closing channel before this listener runs, and
      // their callers resume only after it: they see the loss.
      ch.once('close', () => {
        losses += 1;
        channelReady = false;
        check?.forget();
      });
      ch.on('return', (message: { properties: { headers?: Record<string, unknown> } }) => {
        const token = readString(message.properties.headers, RETURN_TOKEN_HEADER);
        if (token !== undefined && pending.has(token)) returned.add(token);
      });
      // A refusal (a cancel() with an account that may not write P.control: topology/accounts.ts) closes
      // the channel, and the connection manager opens the next one only on a reconnect: ask for it.
      ch.on('error', (err: unknown) => {
        if (replyCode(err) === ACCESS_REFUSED && !closed) setTimeout(() => !closed && manager.reconnect(), 0).unref();
      });
      channelReady = true;
      // Checked at once, so that connected() tells and a missing topology is logged before the first publish.
      watchTopology(await topology);
    },
  });
  // While the topology is missing it is checked again every few seconds, so connected() (the ingest's
  // /readyz) turns true once the topology step has run or a worker has started, with no publish needed.
  let watching = false;
  function watchTopology(resolved: ResolvedTopology): void {
    if (watching) return;
    watching = true;
    let warned = false;
    const attempt = (): void => {
      const connection = manager.connection;
      if (closed || !connection) {
        watching = false;
        return;
      }
      checkOf(resolved)
        .run(connection)
        .then(
          () => (watching = false),
          (error: Error) => {
            if (!warned) logger.warn({ err: error.message, code: (error as RelayError).code }, 'the topology is not on the broker yet');
            warned = true;
            setTimeout(attempt, TOPOLOGY_RECHECK_MS).unref();
          },
        );
    };
    attempt();
  }
  channel.on('error', (err) => {
    logger.error({ err: (err as Error).message, code: (err as RelayError).code }, 'producer channel setup failed');
  });
  // Cancel markers go on the same channel, once its setup declared the control stream.
  const markerChannel = wrapperChannel(channel);
  const holdWrites = createWriteCoalescer(() => amqpSocket(manager));
  const underWay = new Set<Promise<unknown>>();
  let closed = false;

  /**
   * Waits until the topology check has passed on the current connection, up to `until`: rejects with
   * CR_ERR_TOPOLOGY_MISSING when the broker has no topology, with `timeout()` when no broker answers.
   */
  async function topologyFound(resolved: ResolvedTopology, until: number, timeout: () => RelayError): Promise<void> {
    const found = checkOf(resolved);
    while (!found.isPassed) {
      const remaining = until - Date.now();
      if (remaining <= 0) throw timeout();
      const connection = manager.connection;
      try {
        if (connection) {
          await withTimeout(found.run(connection), remaining, timeout);
          continue;
        }
      } catch (error) {
        if (isRelayError(error)) throw error;
        // The connection went while checking: the next one is checked.
      }
      await sleep(Math.min(CHECK_PAUSE_MS, remaining));
    }
  }

  /** `dueAt`: when the callback is due (ms since the epoch), fixed when publish() was called. */
  async function publishConfirmed(
    content: Buffer,
    id: string,
    dueAt: number,
    bucket: PublishBucket,
    trace: TraceContext | undefined,
  ): Promise<void> {
    const timeout = (): RelayError => publishTimeoutError(config.publishTimeout);
    const deadline = Date.now() + config.publishTimeout;
    const lossesAtStart = losses;
    const resolved = resolvedTopology ?? (await withTimeout(topology, config.publishTimeout, timeout));
    // Before the first attempt: a topology that is missing rejects with its own code, nothing published.
    await topologyFound(resolved, deadline, timeout);
    // The delay left now: a first publish waits for the broker's inspection, and its callback must
    // still fall due when the caller asked, not that much later.
    const now = Date.now();
    const route =
      'ordered' in bucket
        ? orderedRoute(resolved.names, resolved.mode, 0, bucket.ordered, now)
        : deliveryRoute(resolved.names, resolved.mode, Math.max(0, dueAt - now), bucket.lane, now);
    // Mandatory, so a lane or binding an operator deleted returns the callback instead of dropping it;
    // not with x-delay: the x-delayed-message exchange routes a delayed message to no queue at publish
    // time (https://github.com/rabbitmq/rabbitmq-delayed-message-exchange#limitations).
    const mandatory = route.headers['x-delay'] === undefined;
    for (;;) {
      const lossesBefore = losses;
      const remaining = deadline - Date.now();
      const token = returnToken();
      pending.add(token);
      try {
        if (remaining <= 0) throw timeout();
        // After a loss the topology is checked again: one deleted meanwhile rejects with its own code.
        await topologyFound(resolved, deadline, timeout);
        // The channel's own timeout, a little later than ours, drops the message from its buffer.
        const confirmed = channel.publish(route.exchange, route.routingKey, content, {
          persistent: true,
          contentType: 'application/json',
          messageId: id,
          timestamp: Math.floor(Date.now() / 1000),
          mandatory,
          // Producer headers: carried into every retry copy (carriedHeaders), so each attempt sees the context.
          headers: { ...route.headers, ...(trace && traceHeaders(trace)), ...(mandatory && { [RETURN_TOKEN_HEADER]: token }) },
          timeout: remaining + CHANNEL_TIMEOUT_GRACE_MS,
        });
        holdWrites();
        await withTimeout(confirmed, remaining, timeout);
        if (!returned.has(token)) return;
        // Unroutable. A publisher declares nothing: a topology deleted whole is CR_ERR_TOPOLOGY_MISSING,
        // one half deleted (a lane or a binding gone) is this, and either way the admin step or a worker declares it again.
        checkOf(resolved).forget();
        await topologyFound(resolved, deadline, timeout);
        logger.warn({ id, exchange: route.exchange, routingKey: route.routingKey }, 'the broker returned a callback as unroutable');
        throw new RelayError(
          'CR_ERR_PUBLISH_RETURNED',
          `the broker returned the callback as unroutable: no queue is bound to exchange "${route.exchange}" with routing key "${route.routingKey}" (the topology is half deleted); ` +
            'run `npx callback-relay topology` (`npm run topology`) or restart a worker to declare it again; it was not queued',
        );
      } catch (error) {
        if (isRelayError(error) && error.code !== 'CR_ERR_PUBLISH_TIMEOUT') throw error;
        const decision = decidePublishFailure({
          timedOut: isRelayError(error, 'CR_ERR_PUBLISH_TIMEOUT'),
          lostDuringAttempt: losses !== lossesBefore,
          lostSincePublish: losses !== lossesAtStart,
          publishTimeoutMs: config.publishTimeout,
          cause: error,
        });
        if (decision.action === 'reject') throw decision.error;
        logger.debug({ id }, 'connection lost before the broker confirmed; publishing the callback again');
      } finally {
        pending.delete(token);
        returned.delete(token);
      }
    }
  }

  async function publish(callback: Callback, options: PublishOptions = {}): Promise<{ id: string }> {
    // First, so everything after it (the closed and buffer checks, adding to underWay) stays in one turn.
    const tracer = tracerKnown ? knownTracer : await tracing;
    if (closed) throw new RelayError('CR_ERR_CLOSED', 'the publisher is closed; nothing was published');
    const { id, content, url } = encodeCallback(callback, config.maxPayloadBytes);
    const calledAt = Date.now();
    const delayMs = firstAttemptDelay(options, calledAt);
    const ordered = orderedPublish(callback, options, delayMs);
    const trace = traceOption(options);
    if (underWay.size >= config.publishBufferLimit) {
      throw new RelayError(
        'CR_ERR_BUFFER_FULL',
        `${underWay.size} publishes are already waiting for the broker (PUBLISH_BUFFER_LIMIT=${config.publishBufferLimit}); nothing was published`,
      );
    }
    const { origin } = url;
    const span = tracer?.startPublish(id, origin, delayMs, trace);
    const settled = publishConfirmed(content, id, calledAt + delayMs, ordered ?? { lane: laneBucket(origin) }, span ? span.context : trace);
    if (span)
      void settled.then(
        () => span.end(),
        (error: unknown) => span.end(error),
      );
    const forget = (): void => void underWay.delete(tracked);
    const tracked: Promise<void> = settled.then(forget, forget);
    underWay.add(tracked);
    await settled;
    return { id };
  }

  async function cancel(id: string): Promise<void> {
    if (closed) throw new RelayError('CR_ERR_CLOSED', 'the publisher is closed; nothing was published');
    const marker = cancelMarker(id, Date.now());
    const deadline = Date.now() + config.publishTimeout;
    const settled = (async () => {
      const { names } =
        resolvedTopology ??
        (await withTimeout(topology, config.publishTimeout, () => markerTimeoutError(markerName(marker), config.publishTimeout, false)));
      await publishMarker(markerChannel, names.controlQueue, marker, deadline - Date.now());
    })();
    // close() waits for cancels under way as for publishes.
    const forget = (): void => void underWay.delete(tracked);
    const tracked: Promise<void> = settled.then(forget, forget);
    underWay.add(tracked);
    await settled;
  }

  async function close(): Promise<void> {
    closed = true;
    await Promise.all(underWay);
    abort.abort();
    // Bounded: with the connection just cut and reconnects refused, closing the channel or the
    // manager can wait for an answer that never comes; close() must still return.
    const closing = (done: Promise<unknown>): Promise<unknown> =>
      withTimeout(done, config.publishTimeout, () => new Error('close timed out')).catch(() => {});
    await closing(channel.close());
    await closing(manager.close());
    await (await tracing)?.shutdown().catch(() => {});
  }

  return { publish, cancel, close, connected: () => channelReady && check?.isPassed === true && manager.isConnected() };
}

/** Between checks of a topology found missing, for connected(). */
const TOPOLOGY_RECHECK_MS = 2_000;

/** Between checks for the topology while no connection is up. */
const CHECK_PAUSE_MS = 100;

/** Past our own deadline, so that the channel's timeout never answers first (its error carries no code). */
const CHANNEL_TIMEOUT_GRACE_MS = 1_000;
