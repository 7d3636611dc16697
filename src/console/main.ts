#!/usr/bin/env node
import { createLogger } from '../logger.js';
import { loadConfigOrExit, stopOnSignals } from '../util/main-process.js';
import { startConsole } from './start-console.js';

/** `npm run console` / `callback-relay console`: one console replica until SIGTERM or SIGINT. */
const config = loadConfigOrExit();
const logger = createLogger(config.logLevel, 'callback-relay-console', config.logFormat);
try {
  const running = await startConsole(config, logger);
  stopOnSignals(logger, () => running.close());
} catch (error) {
  const code = (error as { code?: string }).code;
  if (code === 'CR_ERR_CONFIG') process.stderr.write(`${(error as Error).message}\n`);
  logger.fatal({ err: (error as Error).message, code }, 'console failed to start');
  process.exit(1);
}
