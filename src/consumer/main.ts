#!/usr/bin/env node
import { loadConfig } from '../config/load-config.js';
import { createLogger } from '../logger.js';
import { createWorker } from './worker.js';

let config;
try {
  config = loadConfig();
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n`);
  process.exit(1);
}
const logger = createLogger(config.logLevel);
const worker = createWorker(config, logger);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    logger.info({ signal }, 'draining');
    worker.stop().then(
      () => process.exit(0),
      (error: Error) => {
        logger.error({ err: error.message }, 'stop failed');
        process.exit(1);
      },
    );
  });
}

worker.start().catch((error: Error & { code?: string }) => {
  logger.fatal({ err: error.message, code: error.code }, 'worker failed to start');
  process.exit(1);
});
