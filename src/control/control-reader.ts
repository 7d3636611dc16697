import { randomUUID } from 'node:crypto';
import amqp, { type AmqpConnectionManager, type ChannelWrapper } from 'amqp-connection-manager';
import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { HealthState } from '../isolation/health.js';
import type { Logger } from '../logger.js';
import { HEADER, readString } from '../message/headers.js';
import type { TopologyNames } from '../topology/topology-names.js';
import { parseMarker, type ControlMarker } from './control-markers.js';
import { ControlState, type ControlView, type OriginLimit, type PausedOrigin } from './control-state.js';
import type { TargetLimit } from '../formats/target-limit.js';
import type { Backoff } from '../isolation/target-limits.js';
import { applyDeclarations } from '../topology/declare-list.js';
import { CONTROL_MAX_AGE_MS, controlStream } from '../topology/declare-control.js';
import { heldDestination, moveTo } from './move-held.js';
import { publishMarker, publishMarkerBestEffort, wrapperChannel } from './publish-markers.js';
import { sleep } from '../util/with-timeout.js';
import { RereadCheck, type ReadMarker } from './reread-check.js';

/** Cancelled ids a worker keeps at most (about 100 MB at the longest ids); the oldest are forgotten first. */
export const MAX_CANCELLED = 200_000;
/** Markers the reader may hold unacked: a stream consumer must set a prefetch. */
const PREFETCH = 500;
/** A health broadcast older than this when read (a resumed read catching up) is stale: not acted on. */
const HEALTH_FRESH_MS = 30_000;
/** Held callbacks checked at once: moved in order on one channel, so order is kept at any prefetch. */
const HELD_PREFETCH = 100;
/** How long a starting worker waits to have read the stream up to the present before consuming anyway. */
const SYNC_TIMEOUT_MS = 30_000;
/**
 * A pause whose newest marker is this old is written again, well within the stream's 30-day
 * retention, so it never ages out while it lasts. Checked every PAUSE_RENEW_CHECK_MS by every worker;
 * the first renewal read stops the others'.
 */
export const PAUSE_RENEW_AGE_MS = 7 * 86_400_000;
const PAUSE_RENEW_CHECK_MS = 3_600_000;
/** How long a marker of the reader's may wait for its confirm when no PUBLISH_TIMEOUT is given (the default one). */
const MARKER_TIMEOUT_MS = 10_000;

/** A failed publish, for the log: its message and stable code. */
const why = (error: unknown): { err: string; code: string | undefined } => ({
  err: (error as Error).message,
  code: (error as { code?: string }).code,
});

export interface ControlReader extends ControlView {
  /** Calls `listener` with each circuit transition another worker broadcasts from now on. */
  onHealth(listener: (target: string, state: HealthState) => void): void;
  /** Paused origins, since when and by whom. */
  pausedOrigins(): PausedOrigin[];
  /** Every origin a limit marker named, with its newest limit (`null`: cleared by an operator). */
  originLimits(): OriginLimit[];
  /** Calls `listener` with an origin's limit each time a limit marker is read from now on (`null`: cleared). */
  onLimit(listener: (origin: string, limit: TargetLimit | null) => void): void;
  /** Calls `listener` with each back-off another worker broadcasts from now on. */
  onBackoff(listener: (backoff: Backoff) => void): void;
  /** Whether the start read every marker written before it (false: it went on after a failed sync marker or SYNC_TIMEOUT_MS). */
  readonly readToPresent: boolean;
  /** Stops reading and closes the reader's connection. */
  close(): Promise<void>;
}

export interface ControlReaderOptions {
  urls: string[];
  names: TopologyNames;
  logger: Logger;
  clock: () => number;
  /**
   * A worker's reader also takes its turn at checking held callbacks (P.paused.check, one active
   * consumer across the fleet), publishing each copy within `timeoutMs` (PUBLISH_TIMEOUT).
   */
  moveHeld?: { timeoutMs: number } | undefined;
  /** PUBLISH_TIMEOUT for the reader's own markers (sync, health, pause); else that of `moveHeld`, else 10 s. */
  publishTimeoutMs?: number | undefined;
  /** Renew pauses whose newest marker is older than this (default PAUSE_RENEW_AGE_MS), checking every `checkMs`. */
  renewPauses?: { ageMs: number; checkMs: number } | undefined;
  /**
   * Whether the reader declares P.control on every connect (default: yes, as workers do). An
   * operator's reader does not: its account may not declare (topology/accounts.ts), and it checked
   * passively that the stream exists.
   */
  declare?: boolean | undefined;
}

/**
 * Every worker's reader of P.control, on a reconnecting connection of its own. It reads the stream
 * from its first marker into a ControlState, then follows it live; after a reconnect it resumes at
 * the offset after the last marker it applied (`x-stream-offset`):
 * https://www.rabbitmq.com/docs/streams#consuming. After the broker cancelled its consumer (the stream
 * deleted, or its node gone) it reads the stream again from its start, since a stream declared anew
 * starts at offset 0, and applies what it had not applied yet (reread-check.ts).
 *
 * Resolves once the state holds every marker written before the worker started: it appends a `sync`
 * marker of its own and waits to read it back (at most SYNC_TIMEOUT_MS; then it warns and goes on).
 */
export async function startControlReader(options: ControlReaderOptions): Promise<ControlReader> {
  const { names, logger, clock } = options;
  const state = new ControlState({ maxCancelled: MAX_CANCELLED, maxAgeMs: CONTROL_MAX_AGE_MS }, clock);
  const nonce = randomUUID();
  let synced: () => void = () => {};
  const sync = new Promise<void>((resolve) => (synced = resolve));
  /** The offset of the next marker to apply: markers before it are skipped when a resumed read repeats them. */
  let next = 0;
  /** The last marker applied, to tell the same stream from a new one after a cancel. */
  let last: ReadMarker | undefined;
  /** Set by a consumer cancel: the next setup reads from the start and checks. */
  let reread = false;
  let check: { verdict: RereadCheck; nonce: string; timer: NodeJS.Timeout } | undefined;
  let closing = false;
  /** The reader closes: a held callback's send-back goes back without its wait. */
  const stopping = new AbortController();
  /** Held callbacks being moved: a close lets each reach its ack, so none is left both moved and requeued. */
  const moving = new Set<Promise<void>>();
  let live = false;
  let healthListener: ((target: string, state: HealthState) => void) | undefined;
  let limitListener: ((origin: string, limit: TargetLimit | null) => void) | undefined;
  let backoffListener: ((backoff: Backoff) => void) | undefined;
  const manager: AmqpConnectionManager = amqp.connect(options.urls, { reconnectTimeInSeconds: 1, heartbeatIntervalInSeconds: 10 });
  manager.on('disconnect', ({ err }) => logger.warn({ err: err?.message }, 'control stream reader disconnected; reconnecting'));

  const onMessage = (channel: ConfirmChannel, message: ConsumeMessage | null): void => {
    if (message === null) {
      // The stream was deleted or its node went away: read it again on a new connection.
      if (!closing) {
        reread = true;
        manager.reconnect();
      }
      return;
    }
    const offset = Number(message.properties.headers?.['x-stream-offset']);
    channel.ack(message);
    const read = { offset, content: message.content };
    if (check === undefined || !Number.isInteger(offset)) return applyRead(read);
    const marker = parseMarker(message.content);
    decide(check.verdict.next(read, marker?.type === 'sync' && marker.nonce === check.nonce));
  };

  const decide = (verdict: ReturnType<RereadCheck['next']>): void => {
    if (!verdict.decided || check === undefined) return;
    clearTimeout(check.timer);
    check = undefined;
    if (verdict.renewed) {
      logger.warn(
        { stream: names.controlQueue },
        'the control stream is a new one (deleted and declared again): reading it from its start',
      );
      next = 0;
    }
    for (const read of verdict.apply) applyRead(read);
  };

  const applyRead = ({ offset, content }: ReadMarker): void => {
    // A read resumed at an offset may start at the beginning of the chunk holding it.
    if (Number.isInteger(offset) && offset < next) return;
    if (Number.isInteger(offset)) {
      next = offset + 1;
      last = { offset, content };
    }
    const marker = parseMarker(content);
    if (!marker) return;
    state.apply(marker);
    if (marker.type === 'sync' && marker.nonce === nonce) synced();
    // Health is news, not state: only broadcasts of other workers, read live and fresh, are acted on.
    const fresh = live && clock() - Date.parse(marker.at) <= HEALTH_FRESH_MS;
    if ((marker.type === 'degraded' || marker.type === 'recovered') && marker.from !== nonce && fresh) {
      healthListener?.(marker.target, marker.type === 'degraded' ? 'degraded' : 'healthy');
    }
    if (marker.type === 'backoff' && marker.from !== nonce && fresh && Date.parse(marker.until) > clock()) {
      backoffListener?.({ target: marker.target, factor: marker.factor, untilMs: Date.parse(marker.until) });
    }
    // A limit is state: applied whenever it is read (the newest marker of an origin wins).
    if (marker.type === 'limit') limitListener?.(marker.origin, state.limitOf(marker.origin) ?? null);
  };
  void sync.then(() => (live = true));

  /** Per message, so the id is looked up first and the replay stamp read only for a cancelled id. */
  function isCancelled(id: string, replayStamp?: string): boolean {
    if (!state.isCancelled(id)) return false;
    const replayedAt = Date.parse(replayStamp ?? '');
    return Number.isNaN(replayedAt) || state.isCancelled(id, replayedAt);
  }

  /** After the stream was read up to the present, so a pause written before this worker started holds. */
  const onHeld = (channel: ConfirmChannel, message: ConsumeMessage | null, timeoutMs: number): void => {
    if (message === null) {
      if (!closing) manager.reconnect();
      return;
    }
    // A held callback cancelled meanwhile goes back to its lane, where a worker parks it as canceled.
    const id = String(message.properties.messageId ?? '');
    const holdOn = (origin: string): boolean =>
      state.isPaused(origin) && !isCancelled(id, readString(message.properties.headers, HEADER.replayedAt));
    // While closing it stays unacked: the channel's close puts it back in P.paused.check.
    if (closing) return;
    const moved = sync.then(() =>
      moveTo(channel, message, heldDestination(message.content, names, holdOn), names, timeoutMs, stopping.signal),
    );
    moving.add(moved);
    void moved.finally(() => moving.delete(moved));
  };

  const channel: ChannelWrapper = manager.createChannel({
    confirm: true,
    setup: async (ch: ConfirmChannel) => {
      if (options.declare !== false) await applyDeclarations(ch, controlStream(names));
      await ch.prefetch(PREFETCH);
      const checking = reread && last !== undefined;
      if (checking && last !== undefined) {
        clearTimeout(check?.timer);
        const pending = {
          verdict: new RereadCheck(last),
          nonce: randomUUID(),
          timer: setTimeout(() => pending === check && decide(pending.verdict.expire()), SYNC_TIMEOUT_MS),
        };
        pending.timer.unref();
        check = pending;
      }
      reread = false;
      await ch.consume(names.controlQueue, (message) => onMessage(ch, message), {
        noAck: false,
        arguments: { 'x-stream-offset': checking ? 0 : next },
      });
      // Read back, it tells a new stream shorter than the old one (reread-check.ts).
      if (checking && check)
        void publishMarkerBestEffort(
          markerChannel,
          names.controlQueue,
          { type: 'sync', nonce: check.nonce, at: new Date(clock()).toISOString() },
          markerTimeoutMs,
          () => {},
        );
      const moveHeld = options.moveHeld;
      if (moveHeld) {
        await ch.prefetch(HELD_PREFETCH);
        await ch.consume(names.pausedCheckQueue, (message) => onHeld(ch, message, moveHeld.timeoutMs), { noAck: false });
      }
    },
  });
  channel.on('error', (error: Error) => logger.error({ err: error.message }, 'control stream reader setup failed'));
  const markerChannel = wrapperChannel(channel);
  const markerTimeoutMs = options.publishTimeoutMs ?? options.moveHeld?.timeoutMs ?? MARKER_TIMEOUT_MS;
  /** Best effort: a lost broadcast only makes the other workers detect the change themselves, a lost pause waits for the next streak. */
  const broadcast = (marker: ControlMarker): void =>
    publishMarkerBestEffort(markerChannel, names.controlQueue, marker, markerTimeoutMs, (error) =>
      logger.warn({ ...why(error), marker: marker.type }, 'control marker not stored'),
    );
  await channel.waitForConnect();
  const own = { type: 'sync', nonce, at: new Date(clock()).toISOString() } as const;
  const stored = await publishMarker(markerChannel, names.controlQueue, own, markerTimeoutMs).then(
    () => true,
    (error: unknown) => {
      logger.warn(why(error), 'the sync marker was not stored; consuming while the control stream is still being read');
      return false;
    },
  );
  const timer = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), SYNC_TIMEOUT_MS).unref());
  const readToPresent = stored && (await Promise.race([sync.then(() => true), timer]));
  if (stored && !readToPresent)
    logger.warn(
      { waitedMs: SYNC_TIMEOUT_MS },
      'the control stream was not read to its end in time; consuming while it is still being read',
    );
  synced();
  logger.info({ cancelled: state.cancelledCount, paused: state.pausedOrigins().length }, 'control stream read');
  // A pause lasts until its resume, not until the stream's retention drops its marker: renew it.
  const renew = options.renewPauses ?? { ageMs: PAUSE_RENEW_AGE_MS, checkMs: PAUSE_RENEW_CHECK_MS };
  const renewal = setInterval(() => {
    for (const { origin, since, by } of state.pausesToRenew(renew.ageMs)) {
      broadcast({ type: 'pause', origin, at: new Date(clock()).toISOString(), since, ...(by && { by }) });
    }
    for (const { origin, limit } of state.limitsToRenew(renew.ageMs))
      broadcast({ type: 'limit', origin, at: new Date(clock()).toISOString(), limit });
  }, renew.checkMs);
  renewal.unref();

  return {
    isCancelled,
    isPaused: (origin) => state.isPaused(origin),
    broadcastHealth(target, health) {
      broadcast({ type: health === 'degraded' ? 'degraded' : 'recovered', target, from: nonce, at: new Date(clock()).toISOString() });
    },
    pauseTarget(origin) {
      broadcast({ type: 'pause', origin, at: new Date(clock()).toISOString(), by: 'auto-pause' });
    },
    broadcastBackoff({ target, factor, untilMs }) {
      broadcast({
        type: 'backoff',
        target,
        factor,
        until: new Date(untilMs).toISOString(),
        from: nonce,
        at: new Date(clock()).toISOString(),
      });
    },
    onLimit(listener) {
      limitListener = listener;
    },
    onBackoff(listener) {
      backoffListener = listener;
    },
    originLimits: () => state.originLimits(),
    onHealth(listener) {
      healthListener = listener;
    },
    pausedOrigins: () => state.pausedOrigins(),
    readToPresent,
    async close() {
      closing = true;
      stopping.abort();
      // A copy waits for a definite confirm; a connection blocked for longer is closed all the same.
      if (moving.size > 0) await Promise.race([Promise.allSettled([...moving]), sleep(options.moveHeld?.timeoutMs ?? MARKER_TIMEOUT_MS)]);
      clearInterval(renewal);
      await channel.close().catch(() => {});
      await manager.close().catch(() => {});
    },
  };
}
