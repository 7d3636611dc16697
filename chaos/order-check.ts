import type { Attempt } from './ledger.js';
import type { DeadEntry } from './queues.js';

/**
 * The check of ordered keys: callback n+1 of a key is never attempted before callback n is settled
 * (delivered, parked in P.dead, or cancelled). At-least-once may attempt n again after n+1, never
 * n+1 before n. Pure: it reads what the receivers recorded, in their own order of events (ticks).
 *
 * A callback counts as settled from the earliest moment the relay could have known its end:
 * - an answer that ends it was handed to the worker's socket: a 2xx, a final status (3xx or 4xx but
 *   408 and 429), or a failure (5xx, 408, 429) to attempt MAX_ATTEMPTS or later;
 * - a request of attempt MAX_ATTEMPTS or later left hanging, once its socket closed (the worker gave
 *   up on it);
 * - parked as `canceled`: once its cancel was sent;
 * - parked otherwise with no answer above to account for the park (e.g. failed fast by an open
 *   circuit, or dead-lettered by the broker): once the first request of its last attempt that reached
 *   a receiver arrived, the earliest the park can have followed; with none, from the start.
 * Each is no later than the relay's own settling, so a request counted as an inversion is one that
 * no correct relay sends. A later request for an earlier, settled callback (a redelivery after a
 * crash) is no inversion.
 */

/** One callback of an ordered key, with everything the run saw of it. */
export interface KeyedCallback {
  /** Its number within its key: published once every lower one of the key was confirmed. */
  seq: number;
  id: string;
  /** Its requests, as the receiver recorded them (any order). */
  requests: Attempt[];
  /** Its copies found in P.dead at the end. */
  parked: DeadEntry[];
  /** `--cancel`: the tick at which its cancel was first sent. */
  cancelTick?: number | undefined;
  /** Never confirmed to the producer and never seen again: perhaps never accepted, so nothing of its key waits for it. */
  unaccepted?: boolean;
}

/** A request that came while an earlier callback of its key was not settled. */
export interface Inversion {
  key: string;
  /** The request: for callback `seq` of the key, its attempt number, and the tick it arrived at. */
  seq: number;
  attempt: number;
  tick: number;
  /** The lowest callback of the key not settled by then, and the tick it was settled at (undefined: never). */
  before: number;
  settledTick: number | undefined;
  /** Every request of the key in the order they arrived, and when each callback was settled: for a post-mortem. */
  log: string[];
}

export interface OrderVerdict {
  keys: number;
  callbacks: number;
  requests: number;
  /** Requests that came while an earlier callback of their key was not settled: must be 0. */
  inversions: number;
  /** Keys with at least one inversion. */
  keysInverted: number;
  /** Parked callbacks whose park no answer accounts for (timed by a request's arrival, or from the start). */
  untimedParks: number;
  /** The first inversion of each of the first few keys that had one, with the key's whole log. */
  examples: Inversion[];
}

const EXAMPLES = 5;

const isSuccess = (status: number): boolean => status >= 200 && status < 300;
const isRetryable = (status: number): boolean => status === 408 || status === 429 || status >= 500;

/** Whether the relay may have ended the callback on this request's answer (or on giving up on its hanging request). */
export function endsCallback(request: Attempt, maxAttempts: number): boolean {
  if (request.endTick === undefined) return false;
  const last = Number.isInteger(request.attempt) && request.attempt >= maxAttempts;
  if (request.status === 0) return last; // left hanging: the worker's timeout, or its death
  if (!request.answered) return false; // the worker was gone before the answer was written
  return isSuccess(request.status) || !isRetryable(request.status) || last;
}

/** The earliest tick at which the callback may have been settled (undefined: never), and whether a park had to be timed without an answer. */
export function settledAt(callback: KeyedCallback, maxAttempts: number): { tick: number | undefined; untimed: boolean } {
  const ticks: number[] = [];
  const ending = callback.requests.filter((r) => endsCallback(r, maxAttempts));
  for (const request of ending) ticks.push(request.endTick as number);
  let untimed = false;
  for (const entry of callback.parked) {
    if (entry.reason === 'canceled') {
      ticks.push(callback.cancelTick ?? 0);
      continue;
    }
    const attempts = entry.attempts ?? 0;
    if (ending.some((r) => r.attempt === attempts)) continue; // that answer is when it was parked
    untimed = true;
    // Its last attempt that reached a receiver: the park came after that request arrived.
    const reached = callback.requests.filter((r) => Number.isInteger(r.attempt) && r.attempt <= attempts);
    const last = Math.max(...reached.map((r) => r.attempt));
    const first = reached.filter((r) => r.attempt === last).map((r) => r.tick);
    ticks.push(first.length > 0 ? Math.min(...first) : 0);
  }
  return { tick: ticks.length > 0 ? Math.min(...ticks) : undefined, untimed };
}

const describe = (request: Attempt & { seq: number }, origin: number): string =>
  `#${request.tick} +${((request.at - origin) / 1000).toFixed(3)}s callback ${request.seq} attempt ${request.attempt}: ` +
  (request.status === 0
    ? `left hanging${request.endTick === undefined ? '' : `, closed #${request.endTick}`}`
    : `${request.status}${request.answered ? `, answered #${request.endTick}` : ', never answered (worker gone)'}`);

/** The inversions of one key's callbacks (the first found per request). */
export function checkKey(key: string, callbacks: KeyedCallback[], maxAttempts: number): { inversions: Inversion[]; untimedParks: number } {
  const settled = callbacks.map((callback) => ({ callback, ...settledAt(callback, maxAttempts) }));
  const requests = callbacks
    .flatMap((callback) => callback.requests.map((request) => ({ ...request, seq: callback.seq })))
    .sort((a, b) => a.tick - b.tick);
  const origin = requests[0]?.at ?? 0;
  const log = (): string[] => [
    ...requests.map((request) => describe(request, origin)),
    ...[...settled]
      .sort((a, b) => a.callback.seq - b.callback.seq)
      .map(
        ({ callback, tick, untimed }) =>
          `callback ${callback.seq} (${callback.id}): ${tick === undefined ? (callback.unaccepted ? 'never accepted' : 'never settled') : `settled #${tick}`}` +
          (callback.parked.length > 0
            ? `, parked ${callback.parked.map((e) => `${e.reason} after ${e.attempts ?? '?'}`).join(', ')}`
            : '') +
          (untimed ? ' (park timed by a request)' : ''),
      ),
  ];
  const inversions: Inversion[] = [];
  for (const request of requests) {
    const open = settled
      .filter(({ callback, tick }) => callback.seq < request.seq && !callback.unaccepted && (tick === undefined || tick > request.tick))
      .sort((a, b) => a.callback.seq - b.callback.seq)[0];
    if (open === undefined) continue;
    inversions.push({
      key,
      seq: request.seq,
      attempt: request.attempt,
      tick: request.tick,
      before: open.callback.seq,
      settledTick: open.tick,
      log: [],
    });
  }
  if (inversions.length > 0) inversions[0]!.log = log();
  return { inversions, untimedParks: settled.filter((s) => s.untimed).length };
}

/** Checks every ordered key. */
export function checkOrder(keys: ReadonlyMap<string, KeyedCallback[]>, maxAttempts: number): OrderVerdict {
  const verdict: OrderVerdict = {
    keys: keys.size,
    callbacks: 0,
    requests: 0,
    inversions: 0,
    keysInverted: 0,
    untimedParks: 0,
    examples: [],
  };
  for (const [key, callbacks] of keys) {
    verdict.callbacks += callbacks.length;
    verdict.requests += callbacks.reduce((sum, callback) => sum + callback.requests.length, 0);
    const { inversions, untimedParks } = checkKey(key, callbacks, maxAttempts);
    verdict.untimedParks += untimedParks;
    verdict.inversions += inversions.length;
    if (inversions.length === 0) continue;
    verdict.keysInverted += 1;
    if (verdict.examples.length < EXAMPLES) verdict.examples.push(inversions[0]!);
  }
  return verdict;
}
