const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/;

/**
 * Parses `500ms`, `15s`, `3m`, `6h` (a bare number means milliseconds) into milliseconds.
 * Returns `undefined` for anything else so callers can report the setting by name.
 */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  if (!match) return undefined;
  const unit = (match[2] ?? 'ms') as keyof typeof UNIT_MS;
  const ms = Number(match[1]) * UNIT_MS[unit];
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}

/** Parses a comma-separated list of durations; `undefined` if any entry is not a duration. */
export function parseDurationList(text: string): number[] | undefined {
  const parts = text.split(',').map((part) => part.trim());
  const parsed = parts.map(parseDuration);
  return parsed.every((ms): ms is number => ms !== undefined) ? parsed : undefined;
}

/** The shortest exact spelling of a duration: 15000 → `15s`, 10800000 → `3h`, 1500 → `1500ms`. */
export function formatDuration(ms: number): string {
  for (const unit of ['h', 'm', 's'] as const) {
    if (ms !== 0 && ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}
