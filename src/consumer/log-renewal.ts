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
}

/**
 * Renews what `shard`'s log holds from before `now - renewAfterMs`; resolves with the keys renewed.
 * Rejects if an append fails (the caller hands the shard on: a taker's replay takes the copies
 * stored so far in their followers' places).
 */
export async function renewLog(shard: RenewedShard, now: number, renewAfterMs: number, logger: Logger): Promise<number> {
  const { log } = shard;
  if (!log || shard.closed) return 0;
  const before = now - renewAfterMs;
  if (shard.claimedAt < before) {
    await log.append(recordHeaders({ kind: 'claim', owner: shard.owner, renew: true }));
    shard.claimedAt = now;
  }
  let renewed = 0;
  for (const { key, offsets } of shard.order.renewable(before)) {
    if (shard.closed) break;
    // One read at a time: each opens a consumer on the stream.
    const entries: LogEntry[] = [];
    for (const offset of offsets) {
      const entry = await log.read(offset);
      if (entry === undefined) break;
      entries.push(entry);
    }
    const ids = entries.map((entry) => recordOf(entry.headers)).map((record) => (record?.kind === 'follower' ? record.id : undefined));
    if (entries.length < offsets.length || ids.includes(undefined)) {
      logger.error({ key, offsets }, "an ordered key's followers are no longer all in its log; they cannot be renewed");
      continue;
    }
    const renewal = shard.order.renew(key, offsets);
    if (renewal === undefined) continue;
    // Issued together, in order (the log keeps call order): the hold, then the copies in the key's order.
    const appends = [
      ...renewal.records.map((record) => log.append(recordHeaders(record))),
      ...renewal.copies.map(({ renews }, i) => {
        const entry = entries[i] as LogEntry;
        const record = recordHeaders({
          kind: 'follower',
          owner: shard.owner,
          key,
          id: ids[i] as string,
          behind: renewal.behind,
          renews,
          at: renewal.at,
        });
        return log.append({ ...callbackHeaders(entry.headers), ...record }, entry.body, entry.properties);
      }),
    ];
    await Promise.all(appends);
    renewed += 1;
  }
  return renewed;
}
