/**
 * A shard's log as ordered delivery writes it (key-order.ts): the records, and the fold a worker that
 * takes the shard over (or the console) reads them back with. Pure.
 *
 * The log is a stream with a retention age (topology/declare-ordered.ts): what a key still needs is
 * written again (renewed) before retention could drop it, so the log's newest part always holds the
 * whole state, whatever was dropped before it.
 */

/** Log records (headers of the shard's stream messages; `follower` records carry the whole callback). `at`: when written (ms). */
export type LogRecord =
  /**
   * A worker took the shard: records by any other writer after this one are ignored (a fence). `first`:
   * its owner's claim written again (renewed), with the offset of that owner's first claim, which is
   * where its fence stands even once retention has dropped that claim. `fences`: the fences its owner
   * found on taking the shard over, written once after it, so that they outlast the claims they stood on.
   */
  | { kind: 'claim'; owner: string; first?: number; fences?: Fence[] }
  /**
   * `head` of `key` failed and waits in the delay path; `from`: the follower offset it ran from, `seq`:
   * where that follower was first logged (its copies end with it).
   */
  | { kind: 'hold'; owner: string; key: string; head: string; from?: number; seq?: number; at?: number }
  /**
   * A callback of a held key, stored whole at this record's offset. `behind`: the head it waits behind,
   * held from then on if no release of it follows (the hold itself may be missing). `renews`: a copy of
   * the follower first logged at that offset, which it replaces in its place in the key's line.
   */
  | { kind: 'follower'; owner: string; key: string; id: string; behind?: string; renews?: number; at?: number }
  /** The follower at `offset` (first logged at `seq`) ran and was settled without a hold: it and its copies end. */
  | { kind: 'done'; owner: string; key: string; offset: number; seq?: number }
  /** The held head `head` of `key` is settled: its key moves on. */
  | { kind: 'release'; owner: string; key: string; head: string }
  /** `head` of `key` was parked and the key stops there (ORDERED_ON_DEAD=stop) until a replay of it or a release. */
  | { kind: 'stop'; owner: string; key: string; head: string; from?: number; seq?: number; at?: number };

/** Where a writer's fence stands: the offset of its first claim. */
export interface Fence {
  owner: string;
  offset: number;
}

/** A follower in its key's line: where it is now, where it was first logged (its place), when written. */
export interface Follower {
  offset: number;
  /** The offset the follower was first logged at: its place in its key's line, the same in every copy. */
  seq: number;
  at?: number;
}

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
  /** When the head's hold or stop was written, if it says. */
  headAt?: number;
  /** The followers, in the key's order. */
  followers: Follower[];
}

interface Folded {
  head?: string;
  stopped?: boolean;
  running?: boolean;
  headAt?: number | undefined;
  /** In the key's order, by `seq` (a copy replacing its follower keeps its place). */
  followers: Map<number, Follower>;
}

/**
 * Folds a shard's log, read from its start, into each key's held head and followers not yet run. A
 * record counts only if its writer holds the latest claim before it: a worker that lost the shard and
 * wrote on is ignored. Stops at `until` (the reader's own claim), exclusive, or the end.
 */
export function replay(entries: Iterable<{ offset: number; record: LogRecord }>, until?: string): Map<string, Saved> {
  const log: Array<{ offset: number; record: LogRecord }> = [];
  for (const entry of entries) {
    if (entry.record.kind === 'claim' && entry.record.owner === until && entry.record.first === undefined) break;
    log.push(entry);
  }
  const fences = fencesOf(log);
  const keys = new Map<string, Folded>();
  let owner: string | undefined;
  /** Every follower record counted so far: its offset → the offset its follower was first logged at (`seqs`). */
  const counted = { seqOf: new Map<number, number>(), seqs: new Set<number>() };
  const of = (key: string): Folded => {
    let state = keys.get(key);
    if (!state) keys.set(key, (state = { followers: new Map() }));
    return state;
  };
  for (const { offset, record } of log) {
    while (fences.length > 0 && (fences[0] as Fence).offset <= offset) owner = (fences.shift() as Fence).owner;
    if (record.kind === 'claim' || record.owner !== owner) continue;
    const state = of(record.key);
    const drop = (gone: number, seq?: number): void => {
      // By seq: a follower that ran from its first offset ends its copies too, and a copy's end its follower.
      state.followers.delete(seq ?? counted.seqOf.get(gone) ?? gone);
    };
    switch (record.kind) {
      case 'hold':
      case 'stop':
        state.head = record.head;
        state.headAt = record.at;
        delete state.running;
        if (record.kind === 'stop') state.stopped = true;
        else delete state.stopped;
        if (record.from !== undefined) drop(record.from, record.seq);
        break;
      case 'follower':
        follower(state, { offset, seq: record.renews ?? offset, ...(record.at !== undefined && { at: record.at }) }, counted);
        if (record.behind !== undefined && state.head === undefined) {
          state.head = record.behind;
          state.running = true;
        }
        break;
      case 'done':
        drop(record.offset, record.seq);
        break;
      case 'release':
        if (state.head === record.head) {
          delete state.head;
          delete state.headAt;
          delete state.stopped;
          delete state.running;
        }
        break;
    }
    if (state.head === undefined && state.followers.size === 0) keys.delete(record.key);
  }
  return new Map([...keys].map(([key, state]) => [key, saved(state)]));
}

/**
 * Where each writer's fence stands: the offset of its first claim, known from that claim, from any
 * renewal of it (`first`), or from a later taker's `fences`, so a fence holds even where retention
 * dropped the claim itself. In offset order: a record at offset o counts for the owner of the last
 * fence at or before o.
 */
export function fencesOf(log: Iterable<{ offset: number; record: LogRecord }>): Fence[] {
  const first = new Map<string, number>();
  const known = (owner: string, at: number): void => void first.set(owner, Math.min(first.get(owner) ?? at, at));
  for (const { offset, record } of log) {
    if (record.kind !== 'claim') continue;
    known(record.owner, record.first ?? offset);
    for (const fence of record.fences ?? []) known(fence.owner, fence.offset);
  }
  return [...first].map(([owner, offset]) => ({ owner, offset })).sort((a, b) => a.offset - b.offset);
}

/**
 * The fences a worker taking the shard over writes again (a claim's `fences`): those that decide a
 * record of `log` (read up to its own claim), so none is lost with the claim it stood on. A fence with
 * no record between it and the next decides nothing, and never will (the log only grows at its end):
 * left out, so that owners that came and went (a crash loop) do not pile up.
 */
export function fencesToKeep(log: ReadonlyArray<{ offset: number; record: LogRecord }>): Fence[] {
  const fences = fencesOf(log);
  const records = log.filter(({ record }) => record.kind !== 'claim').map(({ offset }) => offset);
  return fences.filter((fence, i) => {
    const end = fences[i + 1]?.offset ?? Number.POSITIVE_INFINITY;
    return records.some((offset) => offset >= fence.offset && offset < end);
  });
}

/**
 * A follower record into its key's line. A copy takes its follower's place. One whose follower was
 * counted and is gone is a copy no longer needed (that follower ran); one whose follower was never
 * counted (retention dropped it, or its writer's claim) goes where its follower would be, by `seq`.
 */
function follower(state: Folded, entry: Follower, counted: { seqOf: Map<number, number>; seqs: Set<number> }): void {
  const { followers } = state;
  const known = counted.seqs.has(entry.seq);
  counted.seqOf.set(entry.offset, entry.seq);
  counted.seqs.add(entry.seq);
  if (followers.has(entry.seq) || entry.seq === entry.offset) return void followers.set(entry.seq, entry);
  if (known) return;
  // Its follower's place by seq: the line rebuilt in seq order (rare: only after a renewal cut short).
  const line = [...followers.values(), entry].sort((a, b) => a.seq - b.seq);
  followers.clear();
  for (const f of line) followers.set(f.seq, f);
}

function saved(state: Folded): Saved {
  const out: Saved = { followers: [...state.followers.values()] };
  if (state.head !== undefined) out.head = state.head;
  if (state.stopped) out.stopped = true;
  if (state.running) out.running = true;
  if (state.head !== undefined && !state.running && state.headAt !== undefined) out.headAt = state.headAt;
  return out;
}
