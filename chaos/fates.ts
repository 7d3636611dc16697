/**
 * Scripted fates: what the ledger receiver answers for a callback, decided from its id and the
 * `x-callback-attempt` header only, so any worker, on any (re)delivery, meets the same script.
 */

/** Every fate, and the share of callbacks that get it (shares add up to 100). */
export const FATES = {
  ok: 70,
  'fail-then-ok': 10,
  'always-fail': 6,
  'hang-then-ok': 4,
  hang: 3,
  '4xx': 7,
} as const;

export type Fate = keyof typeof FATES;

/** What a fate should end in: delivered (a 2xx), or parked in P.dead with this reason. */
export type Expected = { kind: 'delivered' } | { kind: 'dead'; reason: 'exhausted' | 'rejected' };

/** How the receiver answers one attempt: a status after `delayMs`, or never (until the worker gives up). */
export type Answer = { status: number; delayMs: number } | 'hang';

/**
 * Successes take a little while, like real receivers: a worker killed in that window has had its
 * request processed but never sees the 2xx, which is where at-least-once duplicates come from.
 */
const work = (status: number): Answer => ({ status, delayMs: Math.floor(Math.random() * 40) });
const fast = (status: number): Answer => ({ status, delayMs: 0 });

const ORDER = Object.keys(FATES) as Fate[];

/**
 * The fate of callback number `n`. A fixed, interleaved pattern (not random) so every run — and a
 * re-run after a failure — meets exactly the same mix, spread evenly over the publishing period.
 */
export function fateOf(n: number): Fate {
  let slot = (n * 37) % 100; // 37 is coprime to 100: consecutive ids walk all 100 slots
  for (const fate of ORDER) {
    if (slot < FATES[fate]) return fate;
    slot -= FATES[fate];
  }
  return 'ok';
}

/** Ids carry their fate, so the ledger and the verdict never need a side table to interpret them. */
export const idOf = (run: string, n: number): string => `${run}.${fateOf(n)}.${n}`;

/** The fate written into an id by `idOf` (`run.fate.n`; fates contain dashes, never dots). */
export function fateOfId(id: string): Fate | undefined {
  const fate = id.split('.')[1];
  return ORDER.find((known) => known === fate);
}

/** The receiver's answer to `attempt` (1-based) of a callback with this fate. */
export function answerFor(fate: Fate, attempt: number): Answer {
  switch (fate) {
    case 'ok':
      return work(200);
    case 'fail-then-ok':
      return attempt < 2 ? fast(503) : work(204);
    case 'always-fail':
      return fast(500);
    case 'hang-then-ok':
      return attempt < 2 ? 'hang' : work(200);
    case 'hang':
      return 'hang';
    case '4xx':
      return fast(404);
  }
}

export function expectedOf(fate: Fate): Expected {
  if (fate === 'always-fail' || fate === 'hang') return { kind: 'dead', reason: 'exhausted' };
  if (fate === '4xx') return { kind: 'dead', reason: 'rejected' };
  return { kind: 'delivered' };
}

/** The attempt that should first succeed for a delivered fate (1 unless the script fails it first). */
export const successAttempt = (fate: Fate): number => (fate === 'fail-then-ok' || fate === 'hang-then-ok' ? 2 : 1);

/**
 * Whether the script answers 2xx within `maxAttempts` attempts: then the callback must be delivered,
 * and parking it in P.dead is a failure of the run, however busy the target looked to the relay
 * (isolation changes who waits, never whether a callback is delivered).
 */
export const successCertain = (fate: Fate, maxAttempts: number): boolean =>
  expectedOf(fate).kind === 'delivered' && successAttempt(fate) <= maxAttempts;
