import type { TopologyNames } from '../src/topology/topology-names.js';
import type { Ledger } from './ledger.js';
import { queueDepths, type Depths } from './queues.js';

export interface Quiescence {
  quiescent: boolean;
  waitedS: number;
  last: Depths | undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until nothing is left to do: work, ordered, slow and delay queues empty, no request held open and the
 * receiver quiet for `quietMs`, three polls in a row. The broker only counts ready messages, so a quiet
 * receiver stands in for "no worker holds one": a held message is being delivered, or waits a moment
 * for its confirm. Never before `notBefore` (ms since the epoch): callbacks the plugin still holds are
 * in no queue.
 */
export async function waitQuiescent(
  url: string,
  names: TopologyNames,
  ledger: Ledger,
  quietMs: number,
  timeoutMs: number,
  notBefore = 0,
): Promise<Quiescence> {
  if (notBefore > Date.now()) await sleep(notBefore - Date.now());
  const started = Date.now();
  let calm = 0;
  let last: Depths | undefined;
  while (Date.now() - started < timeoutMs) {
    last = await queueDepths(url, names);
    const empty = last !== undefined && last.work + last.ordered + last.slow + last.delay === 0;
    const quiet = ledger.hanging === 0 && Date.now() - ledger.lastRequestAt >= quietMs;
    calm = empty && quiet ? calm + 1 : 0;
    if (calm >= 3) return { quiescent: true, waitedS: Math.round((Date.now() - started) / 1000), last };
    await sleep(1_000);
  }
  return { quiescent: false, waitedS: Math.round((Date.now() - started) / 1000), last };
}

/** Prints one progress line every `everyMs` until stopped; the run is long and otherwise silent. */
export function progress(
  url: string,
  names: TopologyNames,
  ledger: Ledger,
  confirmed: () => number,
  say: (line: string) => void,
  everyMs = 15_000,
): () => void {
  const started = Date.now();
  let stopped = false;
  void (async () => {
    while (!stopped) {
      await sleep(everyMs);
      if (stopped) return;
      const depths = await queueDepths(url, names);
      const requests = [...ledger.byId.values()].reduce((sum, list) => sum + list.length, 0);
      const queues = depths
        ? `work ${depths.work}, ordered ${depths.ordered}, slow ${depths.slow}, delay ${depths.delay}, dead ${depths.dead}`
        : 'broker unreachable';
      say(
        `  t=${((Date.now() - started) / 1000).toFixed(0).padStart(5)}s  confirmed ${confirmed()}, requests ${requests}, ids seen ${ledger.byId.size}; ${queues}`,
      );
    }
  })();
  return () => {
    stopped = true;
  };
}
