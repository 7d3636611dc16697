import type { Follower, LogRecord } from './key-log.js';

/**
 * One ordered key's state at its shard's owner (policy/key-order.ts decides its changes): its head,
 * the callbacks waiting in the worker behind it, and its followers in the shard's log; and what of it
 * must be written to the log again before the log's retention drops it (`renewal`). Pure.
 */

export interface KeyState<T> {
  /**
   * The callback running or held: `held`, its copy waits in the delay path; `logged`, the log has a
   * hold for it that no release has ended yet; `from`, the log offset it was read from; `running`,
   * a claim knows it only from followers logged behind it (Saved `running`): no copy of it is in the
   * delay path, and its own message, whatever its stamp, runs it.
   */
  head?: Head<T>;
  /** Waiting in the worker behind a running head (only while nothing of the key is in the log). */
  waiting: Array<{ id: string; item: T; at: number }>;
  /** Followers in the log, oldest first. */
  logged: FollowerLine;
  /** Followers appended and not yet seen on the log: they come before any later arrival. */
  appending: number;
  /** Followers (by seq) whose renewal copy is being written: not gone from the log, whatever it says now. */
  copying?: Set<number>;
}

export interface Head<T> {
  id: string;
  held: boolean;
  logged: boolean;
  /** The follower it was read from (`from`, its offset then; `seq`, where first logged), taken out of the line: first again if it cannot be put back. */
  from?: number;
  seq?: number;
  taken?: Follower;
  stopped?: boolean;
  running?: boolean;
  early?: T;
  /** When its hold or stop was written (the clock's ms), for its renewal. */
  at?: number;
}

/**
 * The followers of one held key as its shard's log holds them, oldest first: each by the offset it
 * can be read at now, the offset it was first logged at (its `seq`: a copy written by a renewal
 * takes its follower's place and keeps its seq), and when that record was written. Pure.
 */
export class FollowerLine {
  private readonly line: Follower[];

  constructor(followers: readonly Follower[] = []) {
    this.line = followers.map((follower) => ({ ...follower }));
  }

  get length(): number {
    return this.line.length;
  }

  /** A follower appended behind the others, seen on the log at `offset`. */
  push(offset: number, at?: number): void {
    this.line.push({ offset, seq: offset, ...(at !== undefined && { at }) });
  }

  /** The oldest follower, taken out to run. */
  shift(): Follower | undefined {
    return this.line.shift();
  }

  /**
   * A renewal's copy of the follower first logged at `seq`, seen on the log at `offset`: it takes that
   * follower's place. False if the follower left the line meanwhile (it runs or ran): the copy is
   * not needed, and its follower's own done or hold ends it (by seq) for a taker.
   */
  replace(seq: number, offset: number, at?: number): boolean {
    const follower = this.line.find((f) => f.seq === seq);
    if (follower === undefined) return false;
    follower.offset = offset;
    if (at === undefined) delete follower.at;
    else follower.at = at;
    return true;
  }

  /**
   * The follower read from `offset` leaves the line: it runs now. Found by that offset, else by `seq`
   * (a later copy of it took its place), else as the one first logged there; returns its seq.
   */
  remove(offset: number, seq?: number): number | undefined {
    let at = this.line.findIndex((f) => f.offset === offset);
    if (at < 0 && seq !== undefined) at = this.line.findIndex((f) => f.seq === seq);
    if (at < 0) at = this.line.findIndex((f) => f.seq === offset);
    if (at < 0) return undefined;
    return this.line.splice(at, 1)[0]?.seq;
  }

  /** The follower at `offset`, if it is in the line. */
  at(offset: number): Follower | undefined {
    return this.line.find((f) => f.offset === offset);
  }

  /** Followers whose record was written before `before` (one with no time counts as old), in order. */
  stale(before: number): Follower[] {
    return this.line.filter((f) => (f.at ?? 0) < before);
  }

  offsets(): number[] {
    return this.line.map((f) => f.offset);
  }
}

/** A key's log records written again (`renewal`): append the records, then a copy of each follower, in order. */
export interface Renewal {
  records: LogRecord[];
  /** Each follower to copy whole: its offset now, and the offset it was first logged at (the copy's `renews`). */
  copies: Array<{ offset: number; renews: number }>;
  /** The head the copies wait behind. */
  behind: string;
  /** When they are written (the records' and copies' `at`). */
  at: number;
}

/**
 * A key whose head the log holds (a hold or stop record): its records may be written again, whatever
 * runs or arrives meanwhile (a copy takes its follower's place by seq, later followers come behind).
 * Not one whose head the log knows only from followers (`running`): no hold of it was ever written.
 */
const canRenew = (head: Head<unknown> | undefined): head is Head<unknown> => head !== undefined && head.logged && !head.running;

/** If the key has records written before `before` to renew: the offsets of those of its followers (maybe none). */
export function staleOffsets(state: KeyState<unknown>, before: number): number[] | undefined {
  if (!canRenew(state.head)) return undefined;
  const stale = state.logged.stale(before);
  return stale.length > 0 || (state.head.at ?? 0) < before ? stale.map((f) => f.offset) : undefined;
}

/**
 * What `key` must write again from before `before`: its hold (or stop), and a copy of each follower
 * `read` from the log (as `staleOffsets` named them) still in its line. Each copy, once on the log,
 * takes its follower's place (KeyOrder `followerLogged`; a taker's `replay` does the same).
 * `missing`: followers the log no longer has, which no renewal can bring back (they stay in line, and
 * are not asked for again until `before` passes them anew).
 */
export function renewal(
  writer: { owner: string; key: string; at: number },
  state: KeyState<unknown>,
  before: number,
  read: readonly number[],
  missing: readonly number[],
): Renewal | undefined {
  const { head, logged: line } = state;
  if (!canRenew(head)) return undefined;
  const { owner, key, at } = writer;
  const records: LogRecord[] = [];
  if ((head.at ?? 0) < before) {
    records.push({ kind: head.stopped ? 'stop' : 'hold', owner, key, head: head.id, at });
    head.at = at;
  }
  const copies: Renewal['copies'] = [];
  for (const offset of read) {
    const follower = line.at(offset);
    if (follower === undefined) continue;
    copies.push({ offset, renews: follower.seq });
    (state.copying ??= new Set()).add(follower.seq);
    // Written now: asked for again only once this copy is old (it takes the follower's place when seen).
    follower.at = at;
  }
  for (const offset of missing) {
    const follower = line.at(offset);
    if (follower !== undefined) follower.at = at;
  }
  if (records.length === 0 && copies.length === 0) return undefined;
  return { records, copies, behind: head.id, at };
}
