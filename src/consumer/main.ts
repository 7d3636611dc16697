#!/usr/bin/env node
import { createLogger } from '../logger.js';
import { loadConfigOrExit, stopOnSignals } from '../util/main-process.js';
import { createWorker } from './worker.js';

const config = loadConfigOrExit();
const logger = createLogger(config.logLevel, 'callback-relay', config.logFormat);
const worker = createWorker(config, logger);
stopOnSignals(logger, () => worker.stop());

worker.start().catch((error: Error & { code?: string }) => {
  logger.fatal({ err: error.message, code: error.code }, 'worker failed to start');
  process.exit(1);
});
