import { parseArgs, type ParseArgsConfig } from 'node:util';
import { RelayError } from '../errors.js';

/** A bad subcommand or flag (`CR_ERR_USAGE`); the CLI prints it with a pointer to --help and exits 2. */
export class UsageError extends RelayError<'CR_ERR_USAGE'> {
  constructor(message: string) {
    super('CR_ERR_USAGE', message);
    this.name = 'UsageError';
  }
}

/** node:util parseArgs (strict: unknown flags and stray words are errors), its errors as usage errors. */
export function parseFlags<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/**
 * Parses a subcommand's arguments; a usage error is printed to stderr, naming the command and where
 * its help is, and comes back as `undefined` (exit status 2). Anything else is thrown on.
 */
export function parseOrReport<T>(command: string, parse: () => T): T | undefined {
  try {
    return parse();
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`callback-relay ${command}: ${error.message} (see: callback-relay ${command} --help)\n`);
    return undefined;
  }
}
