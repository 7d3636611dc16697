import type { DlqEntry } from './dlq-entry.js';

/**
 * Which parked callbacks `dlq replay` republishes: given ids, one reason, or everything. (The console
 * replays exactly the messages a page showed, by id: replay-shown.ts.)
 */
export type ReplaySelector = { kind: 'ids'; ids: readonly string[] } | { kind: 'reason'; reason: string } | { kind: 'all' };

/** Whether `entry` is selected. An entry without an id can only be selected by reason or `--all`. */
export function selectForReplay(entry: DlqEntry, selector: ReplaySelector): boolean {
  if (selector.kind === 'all') return true;
  if (selector.kind === 'reason') return entry.reason === selector.reason;
  return entry.id !== null && selector.ids.includes(entry.id);
}

/** The `--id`s that matched none of the `seen` entries, so the operator learns of a typo or a miss. */
export function unmatchedIds(selector: ReplaySelector, seen: Iterable<string | null>): string[] {
  if (selector.kind !== 'ids') return [];
  const found = new Set(seen);
  return [...new Set(selector.ids)].filter((id) => !found.has(id));
}

/** The origin of an entry's URL, or `null` when it has none (an `invalid` message may have anything). */
export function entryOrigin(entry: Pick<DlqEntry, 'url'>): string | null {
  if (entry.url === null) return null;
  try {
    const origin = new URL(entry.url).origin;
    return origin === 'null' ? null : origin;
  } catch {
    return null;
  }
}
