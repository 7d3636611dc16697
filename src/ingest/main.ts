#!/usr/bin/env node
import { createLogger } from '../logger.js';
import { loadConfigOrExit, stopOnSignals } from '../util/main-process.js';
import { startIngest } from './start-ingest.js';

/** `npm run ingest` / `callback-relay ingest`: one ingest replica until SIGTERM or SIGINT. */
const config = loadConfigOrExit();
const logger = createLogger(config.logLevel, 'callback-relay-ingest', config.logFormat);
try {
  const ingest = await startIngest(config, logger);
  stopOnSignals(logger, () => ingest.close());
} catch (error) {
  logger.fatal({ err: (error as Error).message, code: (error as { code?: string }).code }, 'ingest failed to start');
  process.exit(1);
}
