import { amqpUrls } from '../config/amqp-urls.js';
import { connectFirst } from '../amqp/connect.js';
import { originOf, type ControlMarker } from '../control/control-markers.js';
import { cancelMarker, fixedChannel, publishMarkers } from '../control/publish-markers.js';
import { openDeadQueueSession, type DeadQueueSettings } from '../dlq/dead-queue-session.js';
import { peekDead, type PeekedDead } from '../dlq/list-dead.js';
import { purgeShown } from '../dlq/purge-dead.js';
import { replayShown, type ShownReplayResult } from '../dlq/replay-shown.js';
import { RelayError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { TopologyNames } from '../topology/topology-names.js';
import type { ControlView } from './control-view.js';
import { shardKeys, type ShardKeys } from './ordered-shards.js';
import { sessionEndMarker, type EndedSessions } from './session-ends.js';
import { publishConfirmed } from '../amqp/publish-confirmed.js';

/** What the console does on the broker, each through the same code as the CLI (src/control, src/dlq). */
export interface ConsoleActions {
  pause(by: string, origin: string): Promise<void>;
  resume(by: string, origin: string): Promise<void>;
  cancel(by: string, id: string): Promise<void>;
  /**
   * Replays exactly the messages a page showed (one id per message), all or none (`CR_ERR_DEAD_CHANGED`);
   * those parked as `canceled` only with `includeCanceled`.
   */
  replay(by: string, ids: readonly string[], includeCanceled: boolean): Promise<ShownReplayResult>;
  /** Removes exactly the messages a page showed (one id per message), all or none (`CR_ERR_DEAD_CHANGED`); returns how many. */
  purge(by: string, ids: readonly string[]): Promise<number>;
  /** Ends a session on every replica: a marker on P.control (confirmed), applied here at once. */
  endSession(by: string, sessionId: string, expiresMs: number): Promise<void>;
  /** Looks at the first `limit` messages of P.dead without removing any (as `dlq list`). */
  peek(limit: number): Promise<{ total: number; messages: PeekedDead[] }>;
  /** Reads every ordered shard's log, as a worker taking it over would, without a claim (shardKeys). */
  orderedKeys(): Promise<ShardKeys[]>;
}

/**
 * The console's actions. Every one is logged at info with who did it (the token's name) and how many
 * messages or markers it touched. A marker is written to P.control as `callback-relay target` and
 * `cancel` write it (confirmed), then applied to this replica's view at once so its next page shows
 * it; the other replicas read it from the stream.
 */
export function consoleActions(
  config: DeadQueueSettings,
  names: TopologyNames,
  logger: Logger,
  view: ControlView,
  sessions: EndedSessions,
  clock: () => number = Date.now,
): ConsoleActions {
  const log = (action: string, by: string, touched: number, details: Record<string, unknown>): void =>
    logger.info({ action, by, touched, ...details }, `console: ${action} by ${by}`);

  const writeMarkers = async (markers: ControlMarker[]): Promise<void> => {
    const { connection } = await connectFirst(amqpUrls(config.amqpUrl));
    try {
      const channel = await connection.createConfirmChannel();
      channel.on('error', () => {});
      await publishMarkers(fixedChannel(channel), names.controlQueue, markers, config.publishTimeout);
    } finally {
      await connection.close().catch(() => {});
    }
    for (const marker of markers) view.apply(marker);
  };

  const origin = (text: string): string => {
    const value = originOf(text);
    if (value === undefined)
      throw new RelayError('CR_ERR_INVALID_CALLBACK', `origin: ${JSON.stringify(text)} is not an origin such as https://partner.example`, {
        field: 'origin',
      });
    return value;
  };

  const withSession = async <T>(use: (session: Awaited<ReturnType<typeof openDeadQueueSession>>) => Promise<T>): Promise<T> => {
    const session = await openDeadQueueSession(config);
    try {
      return await use(session);
    } finally {
      await session.close();
    }
  };

  return {
    async pause(by, text) {
      const target = origin(text);
      await writeMarkers([{ type: 'pause', origin: target, at: new Date(clock()).toISOString(), by: 'operator' }]);
      log('pause', by, 1, { origin: target });
    },
    async resume(by, text) {
      const target = origin(text);
      await writeMarkers([{ type: 'resume', origin: target, at: new Date(clock()).toISOString() }]);
      log('resume', by, 1, { origin: target });
    },
    async endSession(by, sessionId, expiresMs) {
      const marker = sessionEndMarker(sessionId, expiresMs, clock());
      const { connection } = await connectFirst(amqpUrls(config.amqpUrl));
      try {
        const channel = await connection.createConfirmChannel();
        channel.on('error', () => {});
        // Mandatory: should P.control not exist, the marker comes back instead of being dropped.
        const properties = {
          persistent: true,
          contentType: 'application/json',
          mandatory: true,
          messageId: `${marker.type}:${marker.session}`,
        };
        await publishConfirmed(
          channel,
          { exchange: '', routingKey: names.controlQueue },
          Buffer.from(JSON.stringify(marker)),
          properties,
          config.publishTimeout,
        );
      } finally {
        await connection.close().catch(() => {});
      }
      sessions.apply(marker);
      log('logout', by, 1, {});
    },
    async cancel(by, id) {
      await writeMarkers([cancelMarker(id, clock())]);
      log('cancel', by, 1, { id });
    },
    async replay(by, ids, includeCanceled) {
      const result = await withSession((session) => replayShown(session, ids, includeCanceled));
      log('replay', by, result.replayed, { shown: ids.length, skippedCanceled: result.skippedCanceled, includeCanceled });
      return result;
    },
    async purge(by, ids) {
      const purged = await withSession((session) => purgeShown(session, ids));
      log('purge', by, purged, { shown: ids.length });
      return purged;
    },
    peek: (limit) => withSession(async (session) => ({ total: session.messageCount, messages: (await peekDead(session, limit)).messages })),
    orderedKeys: () => shardKeys(amqpUrls(config.amqpUrl), names),
  };
}
