import { originOf } from '../control/control-markers.js';
import { parseFlags, UsageError } from './usage-error.js';

/** What `callback-relay cancel …` or `callback-relay target …` was asked to do. */
export type ControlCommand =
  | { action: 'help' }
  | { action: 'cancel'; ids: string[] }
  | { action: 'pause' | 'resume'; origin: string }
  | { action: 'list'; json: boolean };

const wantsHelp = (argv: string[]): boolean => argv.length === 0 || argv.includes('--help') || argv.includes('-h');

/** Parses the arguments after `cancel`: one or more callback ids. */
export function parseCancelArgs(argv: string[]): ControlCommand {
  if (wantsHelp(argv)) return { action: 'help' };
  const flag = argv.find((arg) => arg.startsWith('--'));
  if (flag !== undefined) throw new UsageError(`unknown flag ${flag}; give callback ids`);
  return { action: 'cancel', ids: argv };
}

/** Parses the arguments after `target`: `pause ORIGIN`, `resume ORIGIN` or `list [--json]`. */
export function parseTargetArgs(argv: string[]): ControlCommand {
  if (wantsHelp(argv)) return { action: 'help' };
  const [action, ...rest] = argv;
  if (action === 'list') {
    const { values, positionals } = parseFlags({ args: rest, options: { json: { type: 'boolean' } }, allowPositionals: true });
    if (positionals.length > 0) throw new UsageError(`target list takes no arguments but --json (got ${JSON.stringify(positionals[0])})`);
    return { action: 'list', json: values.json === true };
  }
  if (action !== 'pause' && action !== 'resume') throw new UsageError(`unknown target command ${JSON.stringify(action)}; use pause, resume or list`);
  if (rest.length !== 1) throw new UsageError(`target ${action}: give one origin (got ${rest.length})`);
  const origin = originOf(rest[0]!);
  if (origin === undefined) throw new UsageError(`target ${action}: must be an origin such as https://partner.example, got ${JSON.stringify(rest[0])}`);
  return { action, origin };
}
