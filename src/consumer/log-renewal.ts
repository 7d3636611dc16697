import type { Logger } from '../logger.js';
import { callbackHeaders, recordHeaders, recordOf } from '../ordering/log-records.js';
import type { LogEntry } from '../ordering/log-entry.js';
import type { OrderLog } from '../ordering/order-log.js';
import type { KeyOrder } from '../policy/key-order.js';

/**
 * An ordered shard's log, renewed by its owner. The log is a stream that drops records past its age
 * (topology/declare-ordered.ts, ORDERED_LOG_MAX_AGE; https://www.rabbitmq.com/docs/streams#retention),
 * while a key may stay held or stopped for longer (a target paused for weeks). So what the log's
 * taker would need from before `renewAfterMs` is written again: the owner's claim (records count
 * only behind their writer's claim), then each such key's hold or stop and its followers, whole.
 * Each copy names the follower it renews and takes its place (policy/key-log.ts `replay`,
 * KeyOrder `followerLogged`), so a crash midway leaves no follower twice.
 */

/** What renewal needs of a shard its worker owns (ordered-keys.ts). */
export interface RenewedShard {
  owner: string;
  order: KeyOrder<unknown>;
  log?: OrderLog;
  closed: boolean;
  /** When its claim was last written (ms). */
  claimedAt: number;
  /** Where its first claim is in the log (a renewed claim names it, so it fences from there). */
  claimOffset?: number;
}

/**
 * Renews what `shard`'s log holds from before `now - renewAfterMs`; resolves with the keys renewed.
 * A follower that cannot be read now is left for the next turn (those before it are renewed). Rejects
 * if an append fails (the caller hands the shard on: a taker's replay takes the copies stored so far
 * in their followers' places).
 */
export async function renewLog(shard: RenewedShard, now: number, renewAfterMs: number, logger: Logger): Promise<number> {
  const { log, claimOffset } = shard;
  if (!log || shard.closed || claimOffset === undefined) return 0;
  const before = now - renewAfterMs;
  if (shard.claimedAt < before) {
    await log.append(recordHeaders({ kind: 'claim', owner: shard.owner, first: claimOffset }));
    shard.claimedAt = now;
  }
  let renewed = 0;
  for (const { key, offsets } of shard.order.renewable(before)) {
    if (shard.closed) break;
    const { read, missing } = await readFollowers(log, key, offsets, logger);
    if (missing.length > 0)
      logger.error({ key, offsets: missing }, "ordered followers are no longer in their shard's log; they cannot be renewed");
    const renewal = shard.order.renew(key, before, [...read.keys()], missing);
    if (renewal === undefined || shard.closed) continue;
    // Issued together, in order (the log keeps call order): the hold, then the copies in the key's order.
    const appends = [
      ...renewal.records.map((record) => log.append(recordHeaders(record))),
      ...renewal.copies.map(({ offset, renews }) => {
        const { entry, id } = read.get(offset) as { entry: LogEntry; id: string };
        const record = recordHeaders({ kind: 'follower', owner: shard.owner, key, id, behind: renewal.behind, renews, at: renewal.at });
        return log.append({ ...callbackHeaders(entry.headers), ...record }, entry.body, entry.properties);
      }),
    ];
    await Promise.all(appends);
    renewed += 1;
  }
  return renewed;
}

/**
 * The followers at `offsets`, read one at a time (each read opens a consumer on the stream). A read
 * that fails (a timeout, the stream's leader moving) ends this key's turn: the rest wait for the next.
 */
async function readFollowers(
  log: OrderLog,
  key: string,
  offsets: readonly number[],
  logger: Logger,
): Promise<{ read: Map<number, { entry: LogEntry; id: string }>; missing: number[] }> {
  const read = new Map<number, { entry: LogEntry; id: string }>();
  const missing: number[] = [];
  for (const offset of offsets) {
    let entry: LogEntry | undefined;
    try {
      entry = await log.read(offset);
    } catch (error) {
      logger.warn({ key, offset, err: (error as Error).message }, 'an ordered follower could not be read for renewal; tried again soon');
      break;
    }
    const record = entry && recordOf(entry.headers);
    if (entry !== undefined && record?.kind === 'follower') read.set(offset, { entry, id: record.id });
    else missing.push(offset);
  }
  return { read, missing };
}
