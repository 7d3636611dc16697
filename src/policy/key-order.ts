/**
 * Ordered delivery per key, the decisions of one shard's owner (the worker its single active consumer
 * runs on): which callback of a key runs next, which waits, and what the shard's log must record so
 * that a worker taking the shard over knows the same. Pure: no broker, no clock of its own; the
 * consumer carries the decisions out (src/ordering/).
 *
 * A key's callbacks run one at a time, in the order its shard delivered them. While one runs (its
 * head), the next ones wait in the worker, unacked. When the head fails and will be retried, the
 * key is held: the head's copy waits in the delay path, and from then on every callback of the key
 * goes to the shard's log (a stream) as a follower, in order, until the head is settled; then the
 * followers run from the log, one at a time. A key with nothing running, waiting or logged is forgotten.
 *
 * The log is the durable half of this state. A record is written once what it announces is stored and
 * before the message it concerns is acked (a hold after the head's copy, a follower before its message's
 * ack, a release after the head's delivery or dead letter), so a crash leaves at worst a step to repeat:
 * at-least-once may run a callback again, never one before an earlier one of its key is settled.
 *
 * The log keeps its records for a fixed age (a stream's retention): a key held longer has its hold
 * and followers written again (`renewable`, `renew`), each copy taking its follower's place.
 */

import type { LogRecord, Saved } from './key-log.js';
import { FollowerLine, renewal, staleOffsets, type KeyState, type Renewal } from './key-state.js';

export type { LogRecord, Renewal, Saved };

/** A callback of a key, as the shard delivered it or as the log holds it. */
export interface Arrival<T> {
  key: string;
  /** The callback id: the head is known by it, in whatever copy it comes back. */
  id: string;
  /**
   * What the relay stamped on it: `copy`, a held head back from the delay path; `from`, a follower
   * the owner took from the log at that offset and put back in the shard to run; absent, a producer's.
   */
  stamp?: { kind: 'copy' } | { kind: 'from'; offset: number; seq?: number | undefined } | undefined;
  item: T;
  /** When it arrived (ms): one that waits in the worker too long goes to the log (`spill`). */
  at?: number;
}

/** What to do with an arrival. */
export type Admission<T> =
  /** It is its key's head: attempt it. */
  | { kind: 'attempt'; item: T }
  /** It waits in the worker, unacked, behind its key's running head (or as that head's copy, come back early). */
  | { kind: 'wait' }
  /** Append it to the log as a follower (behind the head `behind`, if it has one), then ack it. */
  | { kind: 'log'; item: T; behind?: string | undefined }
  /** Its key has `maxWaiting` waiting already: they and it go to the log, in order, behind `behind`; append each, then ack it. */
  | { kind: 'spill'; items: T[]; behind?: string | undefined }
  /**
   * A copy of a head settled already (a retry that was taken twice), or the one a later copy replaces
   * as the running head's early copy: ack `item`, nothing else.
   */
  | { kind: 'drop'; item: T };

/** What follows a head's settling: records to write first, then what runs next. */
export interface Step<T> {
  /** Records to append, in order, before the head's own message is acked. */
  records: LogRecord[];
  /** Waiting callbacks that now go to the log (the key was just held), in order, behind `behind`: append, then ack. */
  toLog: T[];
  behind?: string | undefined;
  /** The next head, if it waited in the worker (or the head's own copy, back before its hold was decided): attempt it. */
  next?: T;
  /** A copy of the head that came back early, a duplicate now that the head is settled for good: ack it. */
  drop?: T;
  /** The next head is in the log at this offset: read it and put it back in the shard, stamped `from`. */
  read?: { key: string; offset: number };
}

/** Where a head ran from in the log, for its hold, stop or done: the offset read, and where its follower was first logged. */
const ranFrom = (head: { from?: number; seq?: number }): { from?: number; seq?: number } => ({
  ...(head.from !== undefined && { from: head.from }),
  ...(head.seq !== undefined && { seq: head.seq }),
});

/** The id of a key's head, when it is known (one being put back from the log is not yet). */
const headOf = (state: { head?: { id: string } | undefined }): string | undefined => (state.head?.id ? state.head.id : undefined);

/** The state of one shard's keys at its owner. */
export class KeyOrder<T> {
  private readonly keys = new Map<string, KeyState<T>>();

  /**
   * `maxWaiting`: callbacks of one key that may wait in the worker behind its running head; the next
   * one sends them all to the log, so that one key's burst never fills its shard's consumer window
   * (the shard's other keys would wait behind it).
   */
  constructor(
    private readonly owner: string,
    private readonly maxWaiting = Number.POSITIVE_INFINITY,
    /** When records are written (ms), for their renewal; without one, records carry no time. */
    private readonly clock?: () => number,
  ) {}

  /** A callback of `key` arrived from the shard (fresh, or a held head's copy). */
  arrive(arrival: Arrival<T>): Admission<T> {
    const { key, id, item } = arrival;
    let state = this.keys.get(key);
    const { stamp } = arrival;
    if (stamp?.kind === 'copy') {
      if (state?.head?.id !== id) return { kind: 'drop', item };
      if (state.head.held) {
        state.head.held = false;
        return { kind: 'attempt', item };
      }
      // The head still runs or settles: its copy is stored before its hold is decided (`held`), so a
      // short delay can bring it back first. The latest one is kept until the head's outcome says which.
      const earlier = state.head.early;
      state.head.early = item;
      return earlier === undefined ? { kind: 'wait' } : { kind: 'drop', item: earlier };
    }
    if (stamp?.kind === 'from') {
      const head = state?.head;
      // The head a claim knows only from followers logged behind it, put back from the log by the owner
      // that went away while it ran: this delivery is all that is left of it (no hold, so no copy
      // in the delay path), and it runs now, as an unstamped one would. Its offset has run then. Still
      // `running`: the log has no hold of it, so none is written again (renewal).
      if (state !== undefined && head?.id === id && head.held && head.running) {
        const seq = state.logged.remove(stamp.offset, stamp.seq);
        state.head = { id, held: false, logged: true, running: true, from: stamp.offset, ...(seq !== undefined && { seq }) };
        return { kind: 'attempt', item };
      }
      // The follower this owner put back to run; any other is a duplicate of one that ran.
      if (head === undefined || head.from !== stamp.offset || head.id !== '') return { kind: 'drop', item };
      head.id = id;
      return { kind: 'attempt', item };
    }
    if (state === undefined) {
      state = { head: { id, held: false, logged: false }, waiting: [], logged: new FollowerLine(), appending: 0 };
      this.keys.set(key, state);
      return { kind: 'attempt', item };
    }
    // The held head itself, delivered again (its worker died before it was acked): it runs now.
    if (state.head?.id === id && state.head.held) {
      state.head.held = false;
      return { kind: 'attempt', item };
    }
    if (state.head === undefined && state.logged.length === 0 && state.appending === 0) {
      state.head = { id, held: false, logged: false };
      return { kind: 'attempt', item };
    }
    if (state.head?.held || state.logged.length > 0 || state.appending > 0) {
      state.appending += 1;
      return { kind: 'log', item, behind: headOf(state) };
    }
    if (state.waiting.length >= this.maxWaiting) {
      const items = [...state.waiting.map((waiting) => waiting.item), item];
      state.waiting = [];
      state.appending += items.length;
      return { kind: 'spill', items, behind: headOf(state) };
    }
    state.waiting.push({ id, item, at: arrival.at ?? 0 });
    return { kind: 'wait' };
  }

  /** The head `id` of `key` failed and its copy goes to the delay path: the key is held. */
  held(key: string, id: string): Step<T> {
    const state = this.keys.get(key);
    if (state?.head?.id !== id) return { records: [], toLog: [] };
    const { head } = state;
    // Held again (its next retry failed, a paused target's recheck): the log's hold of it stands. A new
    // one each time would grow the log with every recheck of every paused key; the renewal rewrites it.
    const again = head.logged && !head.running && !head.stopped && head.from === undefined;
    const written = again ? { ...(head.at !== undefined && { at: head.at }) } : this.written();
    const records: LogRecord[] = again ? [] : [{ kind: 'hold', owner: this.owner, key, head: id, ...written, ...ranFrom(head) }];
    const { early } = head;
    // A copy already back runs once the hold is recorded, as if it had come after it.
    state.head = { id, held: early === undefined, logged: true, ...written };
    const toLog = state.waiting.map((waiting) => waiting.item);
    state.waiting = [];
    state.appending += toLog.length;
    return { records, toLog, behind: id, ...(early !== undefined && { next: early }) };
  }

  /**
   * The head `id` of `key` is settled (delivered, parked or cancelled): the key moves on; `stop`, a
   * parked head stops its key instead, held until its dead letter is replayed into the shard or released.
   */
  settled(key: string, id: string, stop = false): Step<T> {
    const state = this.keys.get(key);
    if (state?.head?.id !== id) return { records: [], toLog: [] };
    const { early } = state.head;
    const drop = early === undefined ? {} : { drop: early };
    if (stop) {
      const written = this.written();
      const record: LogRecord = { kind: 'stop', owner: this.owner, key, head: id, ...written };
      Object.assign(record, ranFrom(state.head));
      state.head = { id, held: true, logged: true, stopped: true, ...written };
      const toLog = state.waiting.map((waiting) => waiting.item);
      state.waiting = [];
      state.appending += toLog.length;
      return { records: [record], toLog, behind: id, ...drop };
    }
    const records: LogRecord[] = [];
    const { from, seq, logged } = state.head;
    if (from !== undefined) records.push({ kind: 'done', owner: this.owner, key, offset: from, ...(seq !== undefined && { seq }) });
    // Followers logged behind it name it (`behind`): a release ends that too.
    if (logged || state.logged.length > 0 || state.appending > 0) records.push({ kind: 'release', owner: this.owner, key, head: id });
    state.head = undefined;
    return { records, toLog: [], ...drop, ...this.advance(key, state) };
  }

  /**
   * A follower of `key` this owner appended is on the log at `offset` (its record's `renews` and `at`);
   * returns the log read to start, if it is next. A copy (`renews`) takes its follower's place; one
   * whose follower left the line meanwhile is ignored (its follower's own done or hold ends it too).
   */
  followerLogged(key: string, offset: number, record: { renews?: number | undefined; at?: number | undefined } = {}): Step<T> {
    const state = this.keys.get(key);
    if (state === undefined) return { records: [], toLog: [] };
    if (record.renews !== undefined) {
      state.copying?.delete(record.renews);
      const { taken } = state.head ?? {};
      // Its follower is being put back to run: if that fails, it is read again from this copy.
      if (!state.logged.replace(record.renews, offset, record.at) && taken?.seq === record.renews) taken.offset = offset;
      return { records: [], toLog: [] };
    }
    if (state.appending > 0) state.appending -= 1;
    state.logged.push(offset, record.at);
    return { records: [], toLog: [], ...(state.head === undefined ? this.advance(key, state) : {}) };
  }

  /** An operator released a stopped key: it moves on past its parked head (whose dead letter stays in P.dead). */
  release(key: string): Step<T> {
    const state = this.keys.get(key);
    if (!state?.head?.stopped) return { records: [], toLog: [] };
    const records: LogRecord[] = [{ kind: 'release', owner: this.owner, key, head: state.head.id }];
    state.head = undefined;
    return { records, toLog: [], ...this.advance(key, state) };
  }

  /**
   * The follower being put back from `offset` could not be: it stays its key's next head (nothing of
   * the key runs before it), read again by `retryRead`, from a copy of it if one landed since. False if
   * it is no longer being put back (its message arrived after all, or the key moved on): nothing to retry.
   */
  readFailed(key: string, offset: number): boolean {
    const head = this.keys.get(key)?.head;
    if (head?.from !== offset || head.id !== '' || head.taken === undefined) return false;
    head.from = head.taken.offset;
    return true;
  }

  /** The read to try again for a key whose next head is still to be put back (`readFailed`, or `gone` waiting for a copy). */
  retryRead(key: string): Step<T> {
    const head = this.keys.get(key)?.head;
    if (head?.id !== '' || head.from === undefined) return { records: [], toLog: [] };
    return { records: [], toLog: [], read: { key, offset: head.from } };
  }

  /** Where the follower being put back from `offset` was first logged (its put-back is stamped with it). */
  putBackSeq(key: string, offset: number): number | undefined {
    return this.puttingBack(key, offset) ? this.keys.get(key)?.head?.seq : undefined;
  }

  /** Whether the follower at `offset` is being put back as `key`'s next head. */
  puttingBack(key: string, offset: number): boolean {
    const head = this.keys.get(key)?.head;
    return head?.id === '' && head.from === offset;
  }

  /**
   * The follower taken from the log at `offset` is gone from it (retention dropped it: nobody renewed
   * it in time): its key moves on without it rather than wait for good. If a copy of it landed since,
   * that copy is read instead; if one is being written, nothing is done yet (try `retryRead` later).
   */
  gone(key: string, offset: number): Step<T> {
    const state = this.keys.get(key);
    const head = state?.head;
    if (state === undefined || head?.from !== offset || head.id !== '') return { records: [], toLog: [] };
    // A copy of it landed since: read that. One still being written: wait for it (`retryRead` later).
    if (head.taken !== undefined && head.taken.offset !== offset) {
      head.from = head.taken.offset;
      return this.retryRead(key);
    }
    if (head.seq !== undefined && state.copying?.has(head.seq)) return { records: [], toLog: [] };
    const records: LogRecord[] = [{ kind: 'done', owner: this.owner, key, offset, ...(head.seq !== undefined && { seq: head.seq }) }];
    state.head = undefined;
    return { records, toLog: [], ...this.advance(key, state) };
  }

  /** The next head of a key whose head just left: one waiting in the worker, else the log's oldest. */
  private advance(key: string, state: KeyState<T>): Pick<Step<T>, 'next' | 'read'> {
    const waiting = state.waiting.shift();
    if (waiting !== undefined) {
      state.head = { id: waiting.id, held: false, logged: false };
      return { next: waiting.item };
    }
    const taken = state.logged.shift();
    if (taken !== undefined) {
      // Its id is known once it is back in the shard (`arrive` with `from`).
      state.head = { id: '', held: false, logged: false, from: taken.offset, seq: taken.seq, taken };
      return { read: { key, offset: taken.offset } };
    }
    if (state.appending === 0) this.keys.delete(key);
    return {};
  }

  /**
   * Callbacks that waited in the worker behind a running head since before `before` go to the log, with
   * everything after them of their key, so that none stays unacked near the broker's consumer timeout
   * however long its key's heads take. Append them in order, then ack each.
   */
  spill(before: number): Array<{ key: string; items: T[]; behind?: string | undefined }> {
    const out: Array<{ key: string; items: T[]; behind?: string | undefined }> = [];
    for (const [key, state] of this.keys) {
      const first = state.waiting[0];
      if (first === undefined || first.at >= before) continue;
      out.push({ key, items: state.waiting.map((waiting) => waiting.item), behind: headOf(state) });
      state.appending += state.waiting.length;
      state.waiting = [];
    }
    return out;
  }

  /**
   * The state a claim rebuilt from the log (see `replay`): keys with followers and no held head start
   * their oldest follower at once.
   */
  restore(keys: ReadonlyMap<string, Saved>): Array<{ key: string; offset: number }> {
    const reads: Array<{ key: string; offset: number }> = [];
    for (const [key, saved] of keys) {
      const state: KeyState<T> = { waiting: [], logged: new FollowerLine(saved.followers), appending: 0 };
      if (saved.head !== undefined)
        state.head = {
          id: saved.head,
          held: true,
          logged: true,
          ...(saved.stopped ? { stopped: true } : {}),
          ...(saved.running ? { running: true } : {}),
          ...(saved.headAt !== undefined ? { at: saved.headAt } : {}),
        };
      this.keys.set(key, state);
      if (state.head === undefined) {
        const step = this.advance(key, state);
        if (step.read) reads.push(step.read);
      }
    }
    return reads;
  }

  /**
   * Held (or stopped) keys with a record written before `before`, and those of their followers: read
   * each such follower from the log, then `renew`.
   */
  renewable(before: number): Array<{ key: string; offsets: number[] }> {
    const out: Array<{ key: string; offsets: number[] }> = [];
    for (const [key, state] of this.keys) {
      const offsets = staleOffsets(state, before);
      if (offsets !== undefined) out.push({ key, offsets });
    }
    return out;
  }

  /** Writes again what `key` needs from before `before` (key-state.ts `renewal`), with the followers `read` from the log. */
  renew(key: string, before: number, read: readonly number[], missing: readonly number[] = []): Renewal | undefined {
    const state = this.keys.get(key);
    if (state === undefined) return undefined;
    return renewal({ owner: this.owner, key, at: this.clock?.() ?? 0 }, state, before, read, missing);
  }

  /** Every callback waiting in the worker, oldest first per key, taken out (the shard's channel closed, or the worker stops). */
  takeWaiting(): T[] {
    const out: T[] = [];
    for (const state of this.keys.values()) {
      if (state.head?.early !== undefined) out.push(state.head.early);
      out.push(...state.waiting.map((waiting) => waiting.item));
      state.waiting = [];
      if (state.head) delete state.head.early;
    }
    return out;
  }

  /** When a record is written now, if this owner has a clock. */
  private written(): { at?: number } {
    return this.clock === undefined ? {} : { at: this.clock() };
  }

  /** Keys with anything running, waiting or logged. */
  get size(): number {
    return this.keys.size;
  }

  /** Held keys (stopped ones flagged) and their followers in the log, for operators. */
  heldKeys(): Array<{ key: string; head: string; logged: number; stopped?: true }> {
    const out: Array<{ key: string; head: string; logged: number; stopped?: true }> = [];
    for (const [key, state] of this.keys) {
      if (!state.head?.held) continue;
      const logged = state.logged.length + state.appending;
      out.push(state.head.stopped ? { key, head: state.head.id, logged, stopped: true } : { key, head: state.head.id, logged });
    }
    return out;
  }
}
