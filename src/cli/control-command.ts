import { amqpUrls } from '../config/amqp-urls.js';
import { loadConfig, type RelayConfig } from '../config/load-config.js';
import { startControlReader } from '../control/control-reader.js';
import { publishMarkers, cancelMarker } from '../control/publish-markers.js';
import type { ControlMarker } from '../control/control-markers.js';
import { connectFirst } from '../amqp/connect.js';
import { RelayError } from '../errors.js';
import { createLogger } from '../logger.js';
import { topologyNames } from '../topology/topology-names.js';
import { ControlUsageError, parseCancelArgs, parseTargetArgs, type ControlCommand } from './parse-control-args.js';

export const CANCEL_USAGE = `callback-relay cancel <id>...

  Writes a cancel marker for each callback id to the control stream P.control. Every worker reads
  it: the callback is not attempted again but parked in P.dead with reason canceled (an attempt
  already in flight finishes). Replaying it from P.dead delivers it again.

P = TOPOLOGY_PREFIX. Connects with AMQP_URL. Exit status: 0 every marker stored, 1 failed, 2 bad arguments.`;

export const TARGET_USAGE = `callback-relay target <command>

  target pause <origin>     hold every callback to <origin> (https://partner.example) fleet-wide:
                            no attempts, no attempt budget spent; they wait in P.paused
  target resume <origin>    deliver them again: held callbacks return to their lanes, in order
  target list               the origins paused now, and since when

P = TOPOLOGY_PREFIX. Connects with AMQP_URL. Exit status: 0 done, 1 failed, 2 bad arguments.`;

/** Runs `callback-relay cancel …` (`kind` cancel) or `callback-relay target …` and returns the exit status. */
export async function controlCommand(kind: 'cancel' | 'target', argv: string[]): Promise<number> {
  let command: ControlCommand;
  try {
    command = kind === 'cancel' ? parseCancelArgs(argv) : parseTargetArgs(argv);
  } catch (error) {
    if (!(error instanceof ControlUsageError)) throw error;
    process.stderr.write(`callback-relay ${kind}: ${error.message} (see: callback-relay ${kind} --help)\n`);
    return 2;
  }
  if (command.action === 'help') {
    process.stdout.write(`${kind === 'cancel' ? CANCEL_USAGE : TARGET_USAGE}\n`);
    return 0;
  }
  const config = loadConfig();
  if (command.action === 'list') return listPaused(config);
  const now = Date.now();
  const markers: ControlMarker[] = command.action === 'cancel' ? command.ids.map((id) => cancelMarker(id, now)) : [{ type: command.action, origin: command.origin, at: new Date(now).toISOString() }];
  await writeMarkers(config, markers);
  const done = command.action === 'cancel' ? `cancel marker stored for ${command.ids.length} callback(s)` : `${command.origin} ${command.action === 'pause' ? 'paused' : 'resumed'}`;
  process.stdout.write(`${done}\n`);
  return 0;
}

async function writeMarkers(config: RelayConfig, markers: ControlMarker[]): Promise<void> {
  const queue = topologyNames(config.topologyPrefix).controlQueue;
  const { connection } = await connectFirst(amqpUrls(config.amqpUrl));
  connection.on('error', () => {});
  try {
    const probe = await connection.createChannel();
    probe.on('error', () => {});
    await probe.checkQueue(queue).catch((error: unknown) => {
      throw new RelayError('CR_ERR_CONFIG', `TOPOLOGY_PREFIX: the control stream "${queue}" does not exist (value was "${config.topologyPrefix}"; a worker, a publisher or \`npm run topology\` declares it)`, { cause: error });
    });
    const channel = await connection.createConfirmChannel();
    channel.on('error', () => {});
    await publishMarkers(channel, queue, markers, config.publishTimeout);
  } finally {
    await connection.close().catch(() => {});
  }
}

async function listPaused(config: RelayConfig): Promise<number> {
  const logger = createLogger('warn', 'callback-relay-target');
  const reader = await startControlReader({ urls: amqpUrls(config.amqpUrl), names: topologyNames(config.topologyPrefix), logger, clock: Date.now });
  try {
    const paused = reader.pausedOrigins();
    if (paused.length === 0) process.stdout.write('no target is paused\n');
    for (const { origin, since } of paused) process.stdout.write(`${origin}  paused since ${since}\n`);
    return 0;
  } finally {
    await reader.close();
  }
}
