import { replyCode } from '../amqp/broker-errors.js';
import { openChannel, openConnection } from '../amqp/connect.js';
import type { Logger } from '../logger.js';
import { sleep } from '../util/with-timeout.js';
import { connectTopology, type ResolvedTopology, type TopologySettings } from './connect-topology.js';
import { declareDueQueueAside } from './declare-due-queue.js';
import { retireBinaryLevels } from './retire-binary-levels.js';

/**
 * Declares `topology` on a short-lived connection. Workers do this once before consuming so that a
 * conflicting topology (`CR_ERR_TOPOLOGY`) stops them at start instead of looping through reconnects.
 * A quorum queue that another process is declaring at the same moment may not have started yet: the
 * broker then refuses the queue.declare with 404 ("home node … down or inaccessible", seen on 4.3), and
 * the same declaration a moment later succeeds, so that answer alone is tried again, a few times.
 *
 * With `untilBroker`, a declaration cut short because the broker went away (it restarts, the
 * connection dropped) is tried again too, with a growing pause, until the signal aborts: a worker
 * starting while the broker restarts waits for it as it waits for a broker not up yet, instead of
 * exiting. A refusal (a conflicting queue, access refused) still fails at once.
 */
export async function applyTopology(url: string, topology: ResolvedTopology, untilBroker?: { signal: AbortSignal; onRetry: (error: Error) => void }): Promise<AppliedTopology> {
  for (let attempt = 1, pauseMs = 1_000; ; attempt += 1) {
    try {
      return await applyTopologyOnce(url, topology);
    } catch (error) {
      if (queueNotStartedYet(error) && attempt < DECLARE_ATTEMPTS) {
        await sleep(attempt * 500);
      } else if (untilBroker && !untilBroker.signal.aborted && brokerWentAway(error)) {
        untilBroker.onRetry(error as Error);
        await sleep(pauseMs, untilBroker.signal);
        pauseMs = Math.min(pauseMs * 2, 10_000);
      } else {
        throw error;
      }
    }
  }
}

const DECLARE_ATTEMPTS = 5;

/** AMQP's connection-forced (the broker closes connections as it stops): https://www.rabbitmq.com/amqp-0-9-1-reference#constants */
const CONNECTION_FORCED = 320;

/**
 * Whether a declaration failed because the broker went away rather than because it refused: no reply
 * code at all (the socket closed, amqplib's "channel ended"; a connect refused carries a string code)
 * or connection-forced, on the error or on the CR_ERR_TOPOLOGY's cause.
 */
export function brokerWentAway(error: unknown): boolean {
  const cause = (error as { cause?: unknown } | undefined)?.cause ?? error;
  const code = replyCode(cause);
  return code === undefined || code === CONNECTION_FORCED;
}

/** The broker's 404 to a queue.declare (AMQP class 50, method 10), as the cause of CR_ERR_TOPOLOGY. */
export function queueNotStartedYet(error: unknown): boolean {
  const cause = (error as { cause?: { code?: unknown; classId?: unknown; methodId?: unknown } } | undefined)?.cause;
  return cause?.code === 404 && cause.classId === 50 && cause.methodId === 10;
}

/** What a start-time declaration found. */
export interface AppliedTopology {
  /** Queues mode: messages still in the one-level-per-bit delay queues of an earlier version, if it has them. */
  binaryLevelsHold?: number | undefined;
}

async function applyTopologyOnce(url: string, topology: ResolvedTopology): Promise<AppliedTopology> {
  const connection = await openConnection(url);
  try {
    const channel = await openChannel(connection);
    await topology.declare(channel, () => openChannel(connection));
    await channel.close();
    if (topology.mode === 'plugin') await declareDueQueueAside(connection, topology.names);
    return topology.mode === 'queues' ? { binaryLevelsHold: await retireBinaryLevels(connection, topology.names) } : {};
  } finally {
    await connection.close().catch(() => {});
  }
}

/** Declares the topology once and disconnects (`npm run topology`); gives up after `timeoutMs` without a broker. */
export async function declareOnce(config: TopologySettings, logger: Logger, timeoutMs = 30_000): Promise<ResolvedTopology & AppliedTopology> {
  const topology = await connectTopology(config, logger, AbortSignal.timeout(timeoutMs));
  return { ...topology, ...(await applyTopology(topology.url, topology)) };
}
