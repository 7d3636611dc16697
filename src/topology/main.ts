#!/usr/bin/env node
import { loadConfig } from '../config/load-config.js';
import { createLogger } from '../logger.js';
import { declareOnce } from './declare-once.js';

try {
  const config = loadConfig();
  const topology = await declareOnce(config, createLogger(config.logLevel, 'callback-relay', config.logFormat));
  const { names, mode } = topology;
  const queues = [names.workQueue, names.deadQueue, ...(mode === 'queues' ? [`${names.delayLevels.length} delay levels ${names.delayLevel(0)}…${names.delayLevel(names.delayLevels.length - 1)}`] : [names.dueQueue])];
  process.stdout.write(`topology ready (delay mode ${mode}): exchange ${names.exchange}, queues ${queues.join(', ')}\n`);
} catch (error) {
  process.stderr.write(`topology failed: ${(error as Error).message}\n`);
  process.exit(1);
}
