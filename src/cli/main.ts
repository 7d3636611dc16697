#!/usr/bin/env node
import { orderedCommand } from './ordered-command.js';
import { isRelayError } from '../errors.js';
import { accountsCommand } from './accounts-command.js';
import { controlCommand } from './control-command.js';
import { dlqCommand } from './dlq-command.js';
import { historyCommand } from './history-command.js';
import { PUBLISH_USAGE, publishCommand } from './publish-command.js';

const USAGE = `usage: callback-relay <command>

commands:
  publish     publish one callback (see: callback-relay publish --help)
  dlq         list, replay or purge the dead-letter queue P.dead (see: callback-relay dlq --help)
  history     a callback's timeline, or follow events as they happen (see: callback-relay history --help)
  cancel      cancel callbacks by id: they are parked in P.dead as canceled (see: callback-relay cancel --help)
  target      pause, resume or list paused targets fleet-wide (see: callback-relay target --help)
  ingest      run the HTTP ingest (POST /v1/callbacks) on INGEST_PORT until SIGTERM
  console     run the operator console (web pages) on CONSOLE_HOST:CONSOLE_PORT (loopback by default)
              until SIGTERM; needs CONSOLE_TOKENS
  topology    declare the topology of TOPOLOGY_PREFIX once and exit (or: topology delete --yes)
  ordered     release <orderKey>: move a key stopped at a parked callback on (ORDERED_ON_DEAD=stop)
  accounts    print one broker account per role with its least permissions (see: callback-relay accounts --help)

Settings come from environment variables (AMQP_URL, TOPOLOGY_PREFIX, …): see README.md, "Settings",
and docs/configuration.md for all of them.`;

const [command, ...rest] = process.argv.slice(2);
try {
  if (command === 'publish') {
    if (rest.includes('--help') || rest.includes('-h')) process.stdout.write(`${PUBLISH_USAGE}\n`);
    else await publishCommand(rest);
  } else if (command === 'ingest') {
    await import('../ingest/main.js');
  } else if (command === 'console') {
    await import('../console/main.js');
  } else if (command === 'topology') {
    await import('../topology/main.js');
  } else if (command === 'accounts') {
    process.exitCode = accountsCommand(rest);
  } else if (command === 'dlq') {
    process.exitCode = await dlqCommand(rest);
  } else if (command === 'cancel' || command === 'target') {
    process.exitCode = await controlCommand(command, rest);
  } else if (command === 'ordered') {
    process.exitCode = await orderedCommand(rest);
  } else if (command === 'history') {
    // --follow runs until interrupted: Ctrl-C ends the read cleanly.
    const interrupted = new AbortController();
    process.once('SIGINT', () => interrupted.abort());
    process.once('SIGTERM', () => interrupted.abort());
    process.exitCode = await historyCommand(rest, interrupted.signal);
  } else if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`);
  } else {
    process.stderr.write(`unknown command ${JSON.stringify(command)}\n${USAGE}\n`);
    process.exitCode = 2;
  }
} catch (error) {
  const code = isRelayError(error) ? ` [${error.code}]` : '';
  process.stderr.write(`callback-relay${code}: ${(error as Error).message}\n`);
  process.exitCode = isRelayError(error, 'CR_ERR_CONFIG') || isRelayError(error, 'CR_ERR_INVALID_CALLBACK') ? 2 : 1;
}
