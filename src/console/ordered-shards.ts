import type { ChannelModel } from 'amqplib';
import { connectFirst } from '../amqp/connect.js';
import { isRelayError } from '../errors.js';
import { recordOf } from '../ordering/log-records.js';
import { openOrderLog } from '../ordering/order-log.js';
import { readAll, type ReadAllOptions } from '../ordering/read-all.js';
import { replay, type LogRecord, type Saved } from '../policy/key-log.js';
import type { TopologyNames } from '../topology/topology-names.js';

/** One key of a shard as its log leaves it now. */
export interface OrderedKeyRow {
  key: string;
  /** The callback id holding the key; none while its logged callbacks are put back one at a time. */
  head?: string;
  /**
   * `held`: its head waits for a retry; `stopped`: its head was parked and ORDERED_ON_DEAD=stop keeps the
   * key until a replay of it or a release; `draining`: no head, its callbacks in the log run one at a time.
   */
  state: 'held' | 'stopped' | 'draining';
  /** Callbacks of the key waiting in the log. */
  logged: number;
}

/** One shard as the Ordered keys page shows it. */
export interface ShardKeys {
  shard: number;
  queue: string;
  stream: string;
  keys: OrderedKeyRow[];
  /** Why its log could not be read (with its code): then `keys` is empty. */
  error?: string;
}

const STATE_RANK: Record<OrderedKeyRow['state'], number> = { stopped: 0, held: 1, draining: 2 };

/** The rows of one shard from its replayed log: stopped first, then held, then draining, each by key. Pure. */
export function keyRows(saved: ReadonlyMap<string, Saved>): OrderedKeyRow[] {
  const rows = [...saved].map(([key, { head, stopped, followers }]): OrderedKeyRow => {
    const state = head === undefined ? 'draining' : stopped ? 'stopped' : 'held';
    return { key, ...(head !== undefined && { head }), state, logged: followers.length };
  });
  return rows.sort((a, b) => STATE_RANK[a.state] - STATE_RANK[b.state] || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Every shard's keys, each log read on one connection of the broker (shardKeysOn). */
export async function shardKeys(urls: string[], names: TopologyNames, options?: ReadAllOptions): Promise<ShardKeys[]> {
  const { connection } = await connectFirst(urls);
  try {
    return await shardKeysOn(connection, names, options);
  } finally {
    await connection.close().catch(() => {});
  }
}

/**
 * Reads every shard's log (P.ordered.log.<n>) from its start to where it falls quiet (readAll), all
 * at once, and folds it with `replay` as a worker taking the shard over would, but without a claim:
 * the console only reads, so the shard's owner is never fenced. A shard whose log cannot be read
 * says why, and the others are still shown.
 */
export async function shardKeysOn(connection: ChannelModel, names: TopologyNames, options?: ReadAllOptions): Promise<ShardKeys[]> {
  return Promise.all(
    names.orderedLogs.map(async (stream, shard): Promise<ShardKeys> => {
      const queue = names.orderedQueues[shard] ?? '';
      try {
        const log = await openOrderLog(connection, stream);
        const entries: Array<{ offset: number; record: LogRecord }> = [];
        try {
          await readAll(
            log,
            ({ offset, headers }) => {
              const record = recordOf(headers);
              if (record) entries.push({ offset, record });
            },
            options,
          );
        } finally {
          await log.close();
        }
        return { shard, queue, stream, keys: keyRows(replay(entries)) };
      } catch (error) {
        const code = isRelayError(error) ? `[${error.code}] ` : '';
        return { shard, queue, stream, keys: [], error: `${code}${(error as Error).message}` };
      }
    }),
  );
}
