/**
 * A shard's log as ordered delivery writes it (key-order.ts): the records, and the fold a worker that
 * takes the shard over (or the console) reads them back with. Pure.
 */

/** Log records (headers of the shard's stream messages; `follower` records carry the whole callback). */
export type LogRecord =
  /** A worker took the shard: records by any other writer after this one are ignored (a fence). */
  | { kind: 'claim'; owner: string }
  /** `head` of `key` failed and waits in the delay path; `from`: the follower offset it ran from. */
  | { kind: 'hold'; owner: string; key: string; head: string; from?: number }
  /** A callback of a held key, stored whole at this record's offset. */
  /** `behind`: the head it waits behind, held from then on if no release of it follows (the hold itself may be missing). */
  | { kind: 'follower'; owner: string; key: string; id: string; behind?: string }
  /** The follower at `offset` ran and was settled without a hold. */
  | { kind: 'done'; owner: string; key: string; offset: number }
  /** The held head `head` of `key` is settled: its key moves on. */
  | { kind: 'release'; owner: string; key: string; head: string }
  /** `head` of `key` was parked and the key stops there (ORDERED_ON_DEAD=stop) until a replay of it or a release. */
  | { kind: 'stop'; owner: string; key: string; head: string; from?: number };

/** A key as the log left it: its held (or stopped) head, and its followers not yet run. */
export interface Saved {
  head?: string;
  stopped?: boolean;
  /**
   * Only followers name the head (`behind`), no hold or stop record: it was running, not held, when
   * its owner went away. No copy of it waits in the delay path; its own message, back in the shard
   * with whatever stamp it had, is all that is left of it.
   */
  running?: boolean;
  logged: number[];
}

/**
 * Folds a shard's log, read from its start, into each key's held head and followers not yet run. A
 * record counts only if its writer holds the latest claim before it: a worker that lost the shard and
 * wrote on is ignored. Stops at `until` (the reader's own claim), exclusive, or the end.
 */
export function replay(entries: Iterable<{ offset: number; record: LogRecord }>, until?: string): Map<string, Saved> {
  const keys = new Map<string, Saved>();
  let owner: string | undefined;
  const of = (key: string): Saved => {
    let state = keys.get(key);
    if (!state) keys.set(key, (state = { logged: [] }));
    return state;
  };
  const forget = (key: string): void => {
    const state = keys.get(key);
    if (state && state.head === undefined && state.logged.length === 0) keys.delete(key);
  };
  for (const { offset, record } of entries) {
    if (record.kind === 'claim') {
      if (record.owner === until) break;
      owner = record.owner;
      continue;
    }
    if (record.owner !== owner) continue;
    const state = of(record.key);
    switch (record.kind) {
      case 'hold':
      case 'stop':
        state.head = record.head;
        delete state.running;
        if (record.kind === 'stop') state.stopped = true;
        else delete state.stopped;
        if (record.from !== undefined) state.logged = state.logged.filter((o) => o !== record.from);
        break;
      case 'follower':
        state.logged.push(offset);
        if (record.behind !== undefined && state.head === undefined) {
          state.head = record.behind;
          state.running = true;
        }
        break;
      case 'done':
        state.logged = state.logged.filter((o) => o !== record.offset);
        break;
      case 'release':
        if (state.head === record.head) {
          delete state.head;
          delete state.stopped;
          delete state.running;
        }
        break;
    }
    forget(record.key);
  }
  return keys;
}
