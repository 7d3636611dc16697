import { parseDuration } from '../config/duration.js';
import { originOf } from '../control/control-markers.js';
import { parseFlags, UsageError } from './usage-error.js';

/** What `callback-relay history …` was asked to do. */
export type HistoryCommand =
  | { action: 'help' }
  | { action: 'lookup'; id: string; sinceMs: number | undefined; json: boolean }
  | { action: 'follow'; target: string | undefined; sinceMs: number | undefined; json: boolean };

/** Parses the arguments after `history`. Throws `UsageError` naming the flag at fault. */
export function parseHistoryArgs(argv: string[]): HistoryCommand {
  if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) return { action: 'help' };
  const options = {
    since: { type: 'string' },
    json: { type: 'boolean' },
    follow: { type: 'boolean', short: 'f' },
    target: { type: 'string' },
  } as const;
  const { values, positionals } = parseFlags({ args: argv, options, allowPositionals: true });
  const sinceMs = values.since === undefined ? undefined : parseSince(values.since);
  const json = values.json === true;
  if (values.follow === true) {
    if (positionals.length > 0)
      throw new UsageError(`--follow takes no callback id (got ${JSON.stringify(positionals[0])}); use --target ORIGIN to narrow it`);
    return { action: 'follow', target: values.target === undefined ? undefined : parseOrigin(values.target), sinceMs, json };
  }
  if (values.target !== undefined) throw new UsageError('--target: only with --follow');
  if (positionals.length !== 1 || positionals[0] === '')
    throw new UsageError(`give one callback id (got ${positionals.length}), or --follow`);
  return { action: 'lookup', id: positionals[0]!, sinceMs, json };
}

function parseSince(text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0 || !/[a-z]$/.test(text.trim()))
    throw new UsageError(`--since: must be a duration such as 30m, 1h or 48h, got ${JSON.stringify(text)}`);
  return ms;
}

/** `https://host:port` as events' URLs start; a trailing slash or path is refused rather than guessed. */
function parseOrigin(text: string): string {
  const origin = originOf(text);
  if (origin === undefined)
    throw new UsageError(`--target: must be an origin such as https://partner.example, got ${JSON.stringify(text)}`);
  return origin;
}
