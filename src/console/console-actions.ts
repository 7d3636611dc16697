import { amqpUrls } from '../config/amqp-urls.js';
import { connectFirst } from '../amqp/connect.js';
import { originOf, type ControlMarker } from '../control/control-markers.js';
import { cancelMarker, fixedChannel, publishMarkers } from '../control/publish-markers.js';
import { openDeadQueueSession, type DeadQueueSettings } from '../dlq/dead-queue-session.js';
import { peekDead, type PeekedDead } from '../dlq/list-dead.js';
import { purgeFirst } from '../dlq/purge-dead.js';
import { replayDead, type ReplayResult } from '../dlq/replay-dead.js';
import type { ReplaySelector } from '../dlq/select-for-replay.js';
import { RelayError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { TopologyNames } from '../topology/topology-names.js';
import type { ControlView } from './control-view.js';

/** What the console does on the broker, each through the same code as the CLI (src/control, src/dlq). */
export interface ConsoleActions {
  pause(by: string, origin: string): Promise<void>;
  resume(by: string, origin: string): Promise<void>;
  cancel(by: string, id: string): Promise<void>;
  replay(by: string, selector: ReplaySelector, limit: number): Promise<ReplayResult>;
  /** Removes the `count` oldest messages of P.dead (fewer if it holds fewer); returns how many. */
  purge(by: string, count: number): Promise<number>;
  /** Looks at the first `limit` messages of P.dead without removing any (as `dlq list`). */
  peek(limit: number): Promise<{ total: number; messages: PeekedDead[] }>;
}

/**
 * The console's actions. Every one is logged at info with who did it (the token's name) and how many
 * messages or markers it touched. A marker is written to P.control as `callback-relay target` and
 * `cancel` write it (confirmed), then applied to this replica's view at once so its next page shows
 * it; the other replicas read it from the stream.
 */
export function consoleActions(config: DeadQueueSettings, names: TopologyNames, logger: Logger, view: ControlView, clock: () => number = Date.now): ConsoleActions {
  const log = (action: string, by: string, touched: number, details: Record<string, unknown>): void => logger.info({ action, by, touched, ...details }, `console: ${action} by ${by}`);

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
    if (value === undefined) throw new RelayError('CR_ERR_INVALID_CALLBACK', `origin: ${JSON.stringify(text)} is not an origin such as https://partner.example`, { field: 'origin' });
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
    async cancel(by, id) {
      await writeMarkers([cancelMarker(id, clock())]);
      log('cancel', by, 1, { id });
    },
    async replay(by, selector, limit) {
      const result = await withSession((session) => replayDead(session, selector, limit));
      log('replay', by, result.replayed, { selector: selector.kind, kept: result.kept, notFound: result.notFound.length });
      return result;
    },
    async purge(by, count) {
      const purged = await withSession((session) => purgeFirst(session, Math.min(count, session.messageCount)));
      log('purge', by, purged, { asked: count });
      return purged;
    },
    peek: (limit) => withSession(async (session) => ({ total: session.messageCount, messages: (await peekDead(session, limit)).messages })),
  };
}
