import { loadConfig, type RelayConfig } from '../config/load-config.js';
import type { Logger } from '../logger.js';

/** The settings from the environment; on a bad one, prints the error (which names it) and exits 1. */
export function loadConfigOrExit(): RelayConfig {
  try {
    return loadConfig();
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(1);
  }
}

/** On the first SIGTERM or SIGINT: logs `draining`, runs `stop`, then exits 0 (1 if `stop` failed). */
export function stopOnSignals(logger: Logger, stop: () => Promise<void>): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      logger.info({ signal }, 'draining');
      stop().then(
        () => process.exit(0),
        (error: Error) => {
          logger.error({ err: error.message }, 'stop failed');
          process.exit(1);
        },
      );
    });
  }
}
