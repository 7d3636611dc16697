import type { ChannelModel, ConfirmChannel } from 'amqplib';
import type { Logger } from '../logger.js';
import { recordHeaders, recordOf } from '../ordering/log-records.js';
import type { LogEntry } from '../ordering/log-entry.js';
import { openOrderLog, type OrderLog } from '../ordering/order-log.js';
import { fencesToKeep, replay, type LogRecord } from '../policy/key-log.js';
import type { KeyOrder } from '../policy/key-order.js';
import type { Job } from './admit.js';

/**
 * Taking an ordered shard over (ordered-keys.ts), on the first message of a new shard channel: a claim
 * is appended to the shard's log, and the log is read from its start up to that claim and folded
 * (policy/key-log.ts `replay`) before any message of the shard is looked at. Records of any other
 * writer after the claim are ignored by every later reader (a fence). The follow stays open after:
 * it tells the owner where each follower it appends lands (KeyOrder `followerLogged`).
 */

/** An ordered shard as the worker that owns it now keeps it. */
export interface Shard {
  channel: ConfirmChannel;
  owner: string;
  order: KeyOrder<Job>;
  log?: OrderLog;
  ready: Promise<boolean>;
  stop?: () => Promise<void>;
  closed: boolean;
  /** When its claim was last written (ms). */
  claimedAt: number;
  /** Where its claim is in the log: a renewed claim names it. */
  claimOffset?: number;
  /** A renewal of its log is under way. */
  renewing?: Promise<void>;
}

/** What taking a shard over needs of the worker. */
export interface TakeOverIo {
  connection: () => ChannelModel | undefined;
  logger: Logger;
  clock: () => number;
  /** The log's follower of `key` at `offset` is next: put it back in the shard to run. */
  resume: (key: string, offset: number) => void;
}

/**
 * Appends a claim, reads the log up to it, and takes the keys' state from it; then follows the log for
 * followers' offsets. Rejects if the log cannot be opened, followed or appended to before the claim is read.
 */
export async function takeOver(shard: Shard, stream: string, io: TakeOverIo): Promise<boolean> {
  const connection = io.connection();
  if (!connection) throw new Error('no connection');
  const log = await openOrderLog(connection, stream);
  shard.log = log;
  const seen: Array<{ offset: number; record: LogRecord }> = [];
  let caughtUp: () => void = () => {};
  let claimFailed: (error: unknown) => void = () => {};
  const upToClaim = new Promise<void>((resolve, reject) => {
    caughtUp = resolve;
    claimFailed = reject;
  });
  let live = false;
  shard.stop = await log.follow(
    'first',
    (entry: LogEntry) => {
      const record = recordOf(entry.headers);
      if (!record) return;
      if (!live) {
        if (record.kind === 'claim' && record.owner === shard.owner) {
          shard.claimOffset = entry.offset;
          live = true;
          caughtUp();
        } else seen.push({ offset: entry.offset, record });
        return;
      }
      if (record.kind === 'follower' && record.owner === shard.owner && !shard.closed) {
        const step = shard.order.followerLogged(record.key, entry.offset, record);
        if (step.read) io.resume(step.read.key, step.read.offset);
      }
    },
    (error: unknown) => {
      // Without the follow, this owner no longer learns its followers' offsets and keys would wait for
      // good (the stream's leader node went away, say): the shard is handed on and taken over anew.
      if (!live) return claimFailed(error);
      if (shard.closed) return;
      io.logger.error({ stream, err: (error as Error).message }, "an ordered shard's log follow ended; the shard is handed on");
      void shard.channel.close().catch(() => {});
    },
  );
  shard.claimedAt = io.clock();
  await log.append(recordHeaders({ kind: 'claim', owner: shard.owner }));
  await upToClaim;
  // The fences found, written again behind the claim: they outlast the claims they stood on (a
  // record they fence out sits between them and this claim, so retention drops it first).
  const fences = fencesToKeep(seen);
  if (fences.length > 0) await log.append(recordHeaders({ kind: 'claim', owner: shard.owner, first: shard.claimOffset as number, fences }));
  const reads = shard.order.restore(replay(seen));
  io.logger.info({ stream, keys: shard.order.size, held: shard.order.heldKeys().length }, 'ordered shard taken over');
  for (const read of reads) io.resume(read.key, read.offset);
  return true;
}
