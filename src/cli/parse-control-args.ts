import { originOf } from '../control/control-markers.js';
import { checkLimit, parseRate, type TargetLimit } from '../formats/target-limit.js';
import { parseFlags, UsageError } from './usage-error.js';

/** What `callback-relay cancel …` or `callback-relay target …` was asked to do. */
export type ControlCommand =
  | { action: 'help' }
  | { action: 'cancel'; ids: string[] }
  | { action: 'pause' | 'resume'; origin: string }
  /** `limit: null`: --clear. */
  | { action: 'limit'; origin: string; limit: TargetLimit | null }
  | { action: 'list'; json: boolean };

const wantsHelp = (argv: string[]): boolean => argv.length === 0 || argv.includes('--help') || argv.includes('-h');

/** Parses the arguments after `cancel`: one or more callback ids. */
export function parseCancelArgs(argv: string[]): ControlCommand {
  if (wantsHelp(argv)) return { action: 'help' };
  const flag = argv.find((arg) => arg.startsWith('--'));
  if (flag !== undefined) throw new UsageError(`unknown flag ${flag}; give callback ids`);
  return { action: 'cancel', ids: argv };
}

/** Parses the arguments after `target`: `pause ORIGIN`, `resume ORIGIN`, `limit ORIGIN …` or `list [--json]`. */
export function parseTargetArgs(argv: string[]): ControlCommand {
  if (wantsHelp(argv)) return { action: 'help' };
  const [action, ...rest] = argv;
  if (action === 'list') {
    const { values, positionals } = parseFlags({ args: rest, options: { json: { type: 'boolean' } }, allowPositionals: true });
    if (positionals.length > 0) throw new UsageError(`target list takes no arguments but --json (got ${JSON.stringify(positionals[0])})`);
    return { action: 'list', json: values.json === true };
  }
  if (action === 'limit') return parseLimitArgs(rest);
  if (action !== 'pause' && action !== 'resume')
    throw new UsageError(`unknown target command ${JSON.stringify(action)}; use pause, resume, limit or list`);
  if (rest.length !== 1) throw new UsageError(`target ${action}: give one origin (got ${rest.length})`);
  return { action, origin: originArg(action, rest[0]!) };
}

function originArg(action: string, text: string): string {
  const origin = originOf(text);
  if (origin === undefined)
    throw new UsageError(`target ${action}: must be an origin such as https://partner.example, got ${JSON.stringify(text)}`);
  return origin;
}

/** `limit ORIGIN --rate 20/s [--burst N] [--concurrency N]`, or `limit ORIGIN --clear`. */
function parseLimitArgs(args: string[]): ControlCommand {
  const options = {
    rate: { type: 'string' },
    burst: { type: 'string' },
    concurrency: { type: 'string' },
    clear: { type: 'boolean' },
  } as const;
  const { values, positionals } = parseFlags({ args, options, allowPositionals: true });
  if (positionals.length !== 1) throw new UsageError(`target limit: give one origin (got ${positionals.length})`);
  const origin = originArg('limit', positionals[0]!);
  const given = (['rate', 'burst', 'concurrency'] as const).filter((flag) => values[flag] !== undefined);
  if (values.clear === true) {
    if (given.length > 0) throw new UsageError(`target limit: --clear takes no --${given[0]}`);
    return { action: 'limit', origin, limit: null };
  }
  const raw: Record<string, unknown> = {};
  if (values.rate !== undefined) {
    const rate = parseRate(values.rate);
    if (typeof rate === 'string') throw new UsageError(`target limit: --rate ${rate}, got ${JSON.stringify(values.rate)}`);
    raw.rate = rate;
  }
  for (const flag of ['burst', 'concurrency'] as const)
    if (values[flag] !== undefined) raw[flag] = /^\d+$/.test(values[flag]) ? Number(values[flag]) : values[flag];
  const limit = checkLimit(raw);
  if ('problem' in limit)
    throw new UsageError(
      `target limit: --${limit.field} ${limit.problem}${raw[limit.field] === undefined ? '' : `, got ${JSON.stringify(values[limit.field as 'rate'])}`}`,
    );
  return { action: 'limit', origin, limit };
}
