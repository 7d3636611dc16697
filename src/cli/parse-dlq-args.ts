import type { ReplaySelector } from '../dlq/select-for-replay.js';
import { parseFlags, UsageError } from './usage-error.js';

/** What `callback-relay dlq …` was asked to do. */
export type DlqCommand =
  | { action: 'help' }
  | { action: 'list'; limit: number; json: boolean }
  | { action: 'replay'; selector: ReplaySelector; limit: number | undefined }
  | { action: 'purge'; yes: boolean };

export const DEFAULT_LIST_LIMIT = 50;

/** Parses the arguments after `dlq`. Throws `UsageError` naming the flag at fault. */
export function parseDlqArgs(argv: string[]): DlqCommand {
  const [action, ...rest] = argv;
  if (
    action === undefined ||
    action === 'help' ||
    action === '--help' ||
    action === '-h' ||
    rest.includes('--help') ||
    rest.includes('-h')
  ) {
    return { action: 'help' };
  }
  if (action === 'list') {
    const { values } = parseFlags({ args: rest, options: { limit: { type: 'string' }, json: { type: 'boolean' } } });
    return {
      action: 'list',
      limit: values.limit === undefined ? DEFAULT_LIST_LIMIT : parseLimit(values.limit),
      json: values.json === true,
    };
  }
  if (action === 'replay') {
    const options = {
      id: { type: 'string', multiple: true },
      reason: { type: 'string' },
      all: { type: 'boolean' },
      limit: { type: 'string' },
    } as const;
    const { values } = parseFlags({ args: rest, options });
    const given = [values.id !== undefined && '--id', values.reason !== undefined && '--reason', values.all === true && '--all'].filter(
      Boolean,
    );
    if (given.length === 0) throw new UsageError('dlq replay: say what to replay: --id ID (repeatable), --reason REASON or --all');
    if (given.length > 1) throw new UsageError(`dlq replay: give only one of --id, --reason, --all (got ${given.join(' and ')})`);
    const limit = values.limit === undefined ? undefined : parseLimit(values.limit);
    if (values.id !== undefined) {
      if (values.id.some((id) => id === '')) throw new UsageError('--id: must not be empty');
      return { action: 'replay', selector: { kind: 'ids', ids: values.id }, limit };
    }
    if (values.reason !== undefined) {
      if (values.reason === '') throw new UsageError('--reason: must not be empty (e.g. rejected, exhausted, invalid, delivery_limit)');
      return { action: 'replay', selector: { kind: 'reason', reason: values.reason }, limit };
    }
    return { action: 'replay', selector: { kind: 'all' }, limit };
  }
  if (action === 'purge') {
    const { values } = parseFlags({ args: rest, options: { yes: { type: 'boolean', short: 'y' } } });
    return { action: 'purge', yes: values.yes === true };
  }
  throw new UsageError(`unknown dlq command ${JSON.stringify(action)}: expected list, replay or purge`);
}

function parseLimit(text: string): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1 || !Number.isSafeInteger(Number(text))) {
    throw new UsageError(`--limit: must be a whole number of at least 1, got ${JSON.stringify(text)}`);
  }
  return Number(text);
}
