import type { DlqEntry } from '../dlq/dlq-entry.js';
import { entryOrigin } from '../dlq/select-for-replay.js';

/** The dead-letters page's filter; every field optional, all given ones must match. */
export interface DeadFilter {
  /** Part of the callback id. */
  id?: string | undefined;
  /** Part of the URL. */
  url?: string | undefined;
  /** The reason, exactly (exhausted, rejected, invalid, canceled, delivery_limit…). */
  reason?: string | undefined;
  /** Parked (last attempt) at or after this time, and before `to`. */
  from?: Date | undefined;
  to?: Date | undefined;
}

/** Callbacks of one origin parked for one reason. */
export interface DeadGroup {
  /** `null`: messages without a usable URL. */
  origin: string | null;
  reason: string;
  count: number;
  /** The newest `since` of the group (ISO), or `null`. */
  newest: string | null;
}

/** Whether `entry` passes `filter`. Text fields match case-insensitively anywhere in the value. */
export function matchesFilter(entry: DlqEntry, filter: DeadFilter): boolean {
  const contains = (value: string | null, part: string | undefined): boolean =>
    part === undefined || part === '' || (value ?? '').toLowerCase().includes(part.toLowerCase());
  if (!contains(entry.id, filter.id) || !contains(entry.url, filter.url)) return false;
  if (filter.reason !== undefined && filter.reason !== '' && entry.reason !== filter.reason) return false;
  if (filter.from === undefined && filter.to === undefined) return true;
  const since = entry.since === null ? Number.NaN : Date.parse(entry.since);
  if (Number.isNaN(since)) return false;
  return (filter.from === undefined || since >= filter.from.getTime()) && (filter.to === undefined || since < filter.to.getTime());
}

/** Entries grouped by origin and reason, the largest group first. Pure. */
export function groupDead(entries: readonly DlqEntry[]): DeadGroup[] {
  const groups = new Map<string, DeadGroup>();
  for (const entry of entries) {
    const origin = entryOrigin(entry);
    const key = JSON.stringify([origin, entry.reason]);
    const group = groups.get(key) ?? { origin, reason: entry.reason, count: 0, newest: null };
    group.count += 1;
    if (entry.since !== null && (group.newest === null || entry.since > group.newest)) group.newest = entry.since;
    groups.set(key, group);
  }
  return [...groups.values()].sort(
    (a, b) => b.count - a.count || (a.origin ?? '').localeCompare(b.origin ?? '') || a.reason.localeCompare(b.reason),
  );
}

/** A filter from a query string; a time that does not parse is left out (and said so by the page). */
export function filterFromQuery(query: Record<string, string | undefined>): DeadFilter {
  const time = (text: string | undefined): Date | undefined => {
    if (text === undefined || text.trim() === '') return undefined;
    const date = new Date(text);
    return Number.isNaN(date.getTime()) ? undefined : date;
  };
  return { id: query.id?.trim(), url: query.url?.trim(), reason: query.reason?.trim(), from: time(query.from), to: time(query.to) };
}
