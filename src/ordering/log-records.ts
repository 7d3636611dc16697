import { isLogHeader } from '../message/headers.js';
import type { Fence, LogRecord } from '../policy/key-log.js';

/**
 * A shard log's records as the headers of its stream messages (policy/key-order.ts says what each
 * record means). The shard's owner writes them (consumer/ordered-keys.ts); a reader such as the
 * console folds them back with `recordOf` and `replay`. A follower's record headers are added to its
 * callback's own, which never start with `x-order-`.
 */
export const LOG_RECORD_HEADER = {
  /** The record's kind: claim, hold, stop, follower, done or release. */
  record: 'x-order-record',
  /** The writer's id, fenced by the latest claim. */
  owner: 'x-order-owner',
  key: 'x-order-key',
  /** The callback id holding the key (hold, stop, release). */
  head: 'x-order-head',
  /** A follower's callback id. */
  id: 'x-order-id',
  /** The follower offset a held or stopped head ran from. */
  from: 'x-order-from',
  /** The follower offset a `done` settles. */
  offset: 'x-order-offset',
  /** The head a follower was logged behind. */
  behind: 'x-order-behind',
  /** A follower copy's follower: the offset it was first logged at. */
  renews: 'x-order-renews',
  /** A claim written again by its owner: the offset of that owner's first claim. */
  first: 'x-order-first',
  /** The fences a taker found, written again after its claim (JSON: [[owner, offset], …]). */
  fences: 'x-order-fences',
  /** Where the follower a `done`, or a hold or stop `from`, ran from was first logged. */
  seq: 'x-order-seq',
  /** When a hold, stop or follower was written (ms since the epoch). */
  at: 'x-order-at',
} as const;

const H = LOG_RECORD_HEADER;
const LEGACY_RENEW = 'x-order-renew';

/** A record as its log message's headers (a follower's are added to the callback's own). */
export function recordHeaders(record: LogRecord): Record<string, unknown> {
  const headers: Record<string, unknown> = { [H.record]: record.kind, [H.owner]: record.owner };
  if (record.kind === 'claim') {
    if (record.first !== undefined) headers[H.first] = record.first;
    if (record.fences !== undefined) headers[H.fences] = JSON.stringify(record.fences.map((fence) => [fence.owner, fence.offset]));
    return headers;
  }
  headers[H.key] = record.key;
  if (record.kind === 'hold' || record.kind === 'stop' || record.kind === 'release') headers[H.head] = record.head;
  if ((record.kind === 'hold' || record.kind === 'stop') && record.from !== undefined) headers[H.from] = record.from;
  if ((record.kind === 'hold' || record.kind === 'stop' || record.kind === 'done') && record.seq !== undefined) headers[H.seq] = record.seq;
  if (record.kind === 'follower') headers[H.id] = record.id;
  if (record.kind === 'follower' && record.behind !== undefined) headers[H.behind] = record.behind;
  if (record.kind === 'follower' && record.renews !== undefined) headers[H.renews] = record.renews;
  if (record.kind === 'done') headers[H.offset] = record.offset;
  if ((record.kind === 'hold' || record.kind === 'stop' || record.kind === 'follower') && record.at !== undefined)
    headers[H.at] = record.at;
  return headers;
}

/** A log message's record; undefined for anything that is not one (it is skipped). */
export function recordOf(headers: Record<string, unknown>): LogRecord | undefined {
  const kind = headers[H.record];
  const owner = str(headers[H.owner]);
  if (owner === undefined) return undefined;
  if (kind === 'claim') {
    // A renewed claim of an earlier version (a flag, no offset): where its fence stands is unknown, so it is none.
    if (headers[LEGACY_RENEW] !== undefined && headers[H.first] === undefined) return undefined;
    const first = num(headers[H.first]);
    const fences = fencesOf(headers[H.fences]);
    return { kind, owner, ...(first === undefined ? {} : { first }), ...(fences === undefined ? {} : { fences }) };
  }
  const key = str(headers[H.key]);
  if (key === undefined) return undefined;
  const head = str(headers[H.head]);
  const from = num(headers[H.from]);
  const seq = num(headers[H.seq]);
  const at = num(headers[H.at]);
  const written = at === undefined ? {} : { at };
  const ran = { ...(from === undefined ? {} : { from }), ...(seq === undefined ? {} : { seq }) };
  switch (kind) {
    case 'hold':
    case 'stop':
      return head === undefined ? undefined : { kind, owner, key, head, ...ran, ...written };
    case 'release':
      return head === undefined ? undefined : { kind, owner, key, head };
    case 'follower': {
      const id = str(headers[H.id]);
      const behind = str(headers[H.behind]);
      const renews = num(headers[H.renews]);
      if (id === undefined) return undefined;
      return { kind, owner, key, id, ...(behind === undefined ? {} : { behind }), ...(renews === undefined ? {} : { renews }), ...written };
    }
    case 'done': {
      const offset = num(headers[H.offset]);
      return offset === undefined ? undefined : { kind, owner, key, offset, ...(seq === undefined ? {} : { seq }) };
    }
    default:
      return undefined;
  }
}

/** A follower's callback as the shard had it: its log message's headers minus the record's. */
export function callbackHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) if (!isLogHeader(name)) out[name] = value;
  return out;
}

/** A claim's fences, if its header reads as them; anything else counts as none. */
function fencesOf(value: unknown): Fence[] | undefined {
  const text = str(value);
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed)) return undefined;
  const fences: Fence[] = [];
  for (const item of parsed) {
    if (!Array.isArray(item) || typeof item[0] !== 'string' || !Number.isSafeInteger(item[1])) return undefined;
    fences.push({ owner: item[0], offset: item[1] as number });
  }
  return fences;
}

const str = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : Buffer.isBuffer(value) ? value.toString() : undefined;
const num = (value: unknown): number | undefined => {
  const n = typeof value === 'bigint' ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) ? n : undefined;
};
