#!/usr/bin/env node
import { loadConfig } from '../config/load-config.js';
import { amqpUrls } from '../config/amqp-urls.js';
import { createLogger } from '../logger.js';
import { declareOnce } from './connect-topology.js';
import { deleteTopologyAt, teardownNames } from './teardown.js';
import { topologyNames } from './topology-names.js';

const USAGE = `usage: npm run topology [-- delete --yes]   (or: callback-relay topology [delete --yes])

  (no arguments)  declare the topology of TOPOLOGY_PREFIX (idempotent) and exit
  delete --yes    delete every queue and exchange of TOPOLOGY_PREFIX, messages included`;

// Run as `npm run topology` or as `callback-relay topology`, whose first word is the command's name.
const args = process.argv.slice(process.argv[2] === 'topology' ? 3 : 2);
try {
  const config = loadConfig();
  if (args.length === 0) {
    const topology = await declareOnce(config, createLogger(config.logLevel, 'callback-relay', config.logFormat));
    const { names, mode, earlierLevels } = topology;
    const queues = [
      names.workQueue,
      names.deadQueue,
      ...(mode === 'queues'
        ? [`${names.delayLevels.length} delay levels ${names.delayLevels[0]}…${names.delayLevels.at(-1)}`]
        : [names.dueQueue]),
    ];
    process.stdout.write(`topology ready (delay mode ${mode}): exchange ${names.exchange}, queues ${queues.join(', ')}\n`);
    if (earlierLevels) {
      process.stdout.write(
        `the delay levels of an earlier version (${earlierLevels.levels.join(', ')}) hold ${earlierLevels.messages} messages: unbound from ${names.delayExchange}, they drain on their own; delete them once empty (docs/delay-modes.md)\n`,
      );
    }
  } else if (args[0] === 'delete' && args.length <= 2) {
    const names = topologyNames(config.topologyPrefix, config.lanes, config.orderedShards);
    const { queues, exchanges } = teardownNames(names);
    if (args[1] !== '--yes') {
      // Deletes messages: refuse unless asked for explicitly.
      process.stderr.write(
        `would delete ${queues.length} queues (${queues.join(', ')}) and ${exchanges.length} exchanges of prefix "${names.exchange}", messages included; pass --yes\n`,
      );
      process.exit(2);
    }
    await deleteTopologyAt(amqpUrls(config.amqpUrl), names);
    process.stdout.write(`deleted the topology of prefix "${names.exchange}": ${queues.length} queues, ${exchanges.length} exchanges\n`);
  } else {
    process.stderr.write(`${USAGE}\n`);
    process.exit(2);
  }
} catch (error) {
  process.stderr.write(`topology failed: ${(error as Error).message}\n`);
  process.exit(1);
}
