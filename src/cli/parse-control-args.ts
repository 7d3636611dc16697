import { originOf } from '../control/control-markers.js';

/** What `callback-relay cancel …` or `callback-relay target …` was asked to do. */
export type ControlCommand =
  | { action: 'help' }
  | { action: 'cancel'; ids: string[] }
  | { action: 'pause' | 'resume'; origin: string }
  | { action: 'list' };

/** A bad argument; the CLI prints it with the usage and exits 2. */
export class ControlUsageError extends Error {
  override readonly name = 'ControlUsageError';
}

const wantsHelp = (argv: string[]): boolean => argv.length === 0 || argv.includes('--help') || argv.includes('-h');

/** Parses the arguments after `cancel`: one or more callback ids. */
export function parseCancelArgs(argv: string[]): ControlCommand {
  if (wantsHelp(argv)) return { action: 'help' };
  const flag = argv.find((arg) => arg.startsWith('--'));
  if (flag !== undefined) throw new ControlUsageError(`unknown flag ${flag}; give callback ids`);
  return { action: 'cancel', ids: argv };
}

/** Parses the arguments after `target`: `pause ORIGIN`, `resume ORIGIN` or `list`. */
export function parseTargetArgs(argv: string[]): ControlCommand {
  if (wantsHelp(argv)) return { action: 'help' };
  const [action, ...rest] = argv;
  if (action === 'list') {
    if (rest.length > 0) throw new ControlUsageError(`target list takes no arguments (got ${JSON.stringify(rest[0])})`);
    return { action: 'list' };
  }
  if (action !== 'pause' && action !== 'resume') throw new ControlUsageError(`unknown target command ${JSON.stringify(action)}; use pause, resume or list`);
  if (rest.length !== 1) throw new ControlUsageError(`target ${action}: give one origin (got ${rest.length})`);
  const origin = originOf(rest[0]!);
  if (origin === undefined) throw new ControlUsageError(`target ${action}: must be an origin such as https://partner.example, got ${JSON.stringify(rest[0])}`);
  return { action, origin };
}
