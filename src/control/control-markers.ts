import { checkLimit, type TargetLimit } from '../formats/target-limit.js';

/**
 * The markers of the control stream P.control: small JSON messages with a type and a time. Workers
 * read them all from the stream's start, so a marker is never consumed away; it takes effect on every
 * worker, those started after it included, for as long as the stream keeps it.
 */
export type ControlMarker =
  | { type: 'cancel'; id: string; at: string }
  /**
   * `by`: who paused it, an operator (the CLI) or a worker's AUTO_PAUSE_AFTER; absent in markers written
   * before it was added. `since`: set on a pause a worker wrote again so that the stream's retention
   * does not end it (control-reader.ts), the time of the pause it renews; such a marker never pauses
   * an origin resumed at or after `since`.
   */
  | { type: 'pause'; origin: string; at: string; by?: PausedBy; since?: string }
  | { type: 'resume'; origin: string; at: string }
  /** A worker's circuit for `target` opened (`degraded`) or closed (`recovered`); `from` names the reader that wrote it. */
  | { type: 'degraded' | 'recovered'; target: string; from: string; at: string }
  /** Written by a starting worker: once it reads its own sync marker back, it has read every marker before it. */
  | { type: 'sync'; nonce: string; at: string }
  /** An operator's fleet-wide limit for `origin` (`callback-relay target limit`); `null` clears it. */
  | { type: 'limit'; origin: string; at: string; limit: TargetLimit | null }
  /**
   * A receiver asked a worker to slow down (429, 503 with Retry-After): the fleet uses `factor` of
   * `target`'s configured rate and sends nothing before `until`. News like health: acted on live only.
   */
  | { type: 'backoff'; target: string; factor: number; until: string; from: string; at: string };

export type ControlMarkerType = ControlMarker['type'];

/** Who wrote a pause marker. */
export type PausedBy = 'operator' | 'auto-pause';

/** The JSON body of a marker as it is published. */
export const encodeMarker = (marker: ControlMarker): Buffer => Buffer.from(JSON.stringify(marker));

/**
 * A marker read from the stream, or `undefined` for anything else (not JSON, an unknown type, a
 * missing field): a reader skips what it cannot use rather than stop on it.
 */
export function parseMarker(content: Buffer): ControlMarker | undefined {
  let value: unknown;
  try {
    value = JSON.parse(content.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  const at = record.at;
  if (typeof at !== 'string' || Number.isNaN(Date.parse(at))) return undefined;
  const text = (key: string): string | undefined =>
    typeof record[key] === 'string' && record[key] !== '' ? (record[key] as string) : undefined;
  switch (record.type) {
    case 'cancel': {
      const id = text('id');
      return id === undefined ? undefined : { type: 'cancel', id, at };
    }
    case 'pause': {
      const origin = text('origin');
      const by = record.by === 'operator' || record.by === 'auto-pause' ? { by: record.by as PausedBy } : {};
      const since = text('since');
      const renews = since !== undefined && !Number.isNaN(Date.parse(since)) ? { since } : {};
      return origin === undefined ? undefined : { type: 'pause', origin, at, ...by, ...renews };
    }
    case 'resume': {
      const origin = text('origin');
      return origin === undefined ? undefined : { type: 'resume', origin, at };
    }
    case 'degraded':
    case 'recovered': {
      const target = text('target');
      const from = text('from');
      return target === undefined || from === undefined ? undefined : { type: record.type, target, from, at };
    }
    case 'sync': {
      const nonce = text('nonce');
      return nonce === undefined ? undefined : { type: 'sync', nonce, at };
    }
    case 'limit': {
      const origin = text('origin');
      if (origin === undefined) return undefined;
      if (record.limit === null) return { type: 'limit', origin, at, limit: null };
      if (typeof record.limit !== 'object' || Array.isArray(record.limit)) return undefined;
      const limit = checkLimit(record.limit as Record<string, unknown>);
      return 'problem' in limit ? undefined : { type: 'limit', origin, at, limit };
    }
    case 'backoff': {
      const target = text('target');
      const from = text('from');
      const until = text('until');
      const factor = record.factor;
      if (target === undefined || from === undefined || until === undefined || Number.isNaN(Date.parse(until))) return undefined;
      if (typeof factor !== 'number' || !(factor > 0 && factor <= 1)) return undefined;
      return { type: 'backoff', target, factor, until, from, at };
    }
    default:
      return undefined;
  }
}

export { originOf } from '../formats/origin.js';
