import type { ChannelModel } from 'amqplib';
import { amqpUrls } from '../config/amqp-urls.js';
import { loadConfig, type RelayConfig } from '../config/load-config.js';
import { startControlReader } from '../control/control-reader.js';
import { cancelMarker, fixedChannel, publishMarkers } from '../control/publish-markers.js';
import type { ControlMarker } from '../control/control-markers.js';
import { connectFirst, openChannel } from '../amqp/connect.js';
import { RelayError } from '../errors.js';
import { createLogger } from '../logger.js';
import { topologyNames } from '../topology/topology-names.js';
import { formatTargets } from './format-paused.js';
import { describeLimit } from '../formats/target-limit.js';
import { parseCancelArgs, parseTargetArgs, type ControlCommand } from './parse-control-args.js';
import { parseOrReport } from './usage-error.js';

export const CANCEL_USAGE = `callback-relay cancel <id>...

  Writes a cancel marker for each callback id to the control stream P.control. Every worker reads
  it: the callback is not attempted again but parked in P.dead with reason canceled (an attempt
  already in flight finishes). Replaying it from P.dead delivers it again.

P = TOPOLOGY_PREFIX. Connects with AMQP_URL. Exit status: 0 every marker stored, 1 failed, 2 bad arguments.`;

export const TARGET_USAGE = `callback-relay target <command>

  target pause <origin>     hold every callback to <origin> (https://partner.example) fleet-wide:
                            no attempts, no attempt budget spent; they wait in P.paused
  target resume <origin>    deliver them again: held callbacks return to their lanes, in order
  target limit <origin> --rate 20/s [--burst N] [--concurrency N]
                            limit the requests to <origin> for the whole fleet: a rate (per s,
                            m or h) with its burst, requests at once, or both; callbacks that
                            wait for it spend no attempt (docs/limits.md)
  target limit <origin> --clear
                            remove it (TARGET_LIMITS_FILE's entry for <origin> too)
  target list [--json]      the origins paused now, since when and by whom (an operator or
                            AUTO_PAUSE_AFTER), and the limits set on the control stream;
                            --json prints one JSON array

P = TOPOLOGY_PREFIX. Connects with AMQP_URL. Exit status: 0 done, 1 failed, 2 bad arguments.`;

/** Runs `callback-relay cancel …` (`kind` cancel) or `callback-relay target …` and returns the exit status. */
export async function controlCommand(kind: 'cancel' | 'target', argv: string[]): Promise<number> {
  const command: ControlCommand | undefined = parseOrReport(kind, () =>
    kind === 'cancel' ? parseCancelArgs(argv) : parseTargetArgs(argv),
  );
  if (command === undefined) return 2;
  if (command.action === 'help') {
    process.stdout.write(`${kind === 'cancel' ? CANCEL_USAGE : TARGET_USAGE}\n`);
    return 0;
  }
  const config = loadConfig();
  if (command.action === 'list') return listPaused(config, command.json);
  const now = Date.now();
  const at = new Date(now).toISOString();
  const markers: ControlMarker[] =
    command.action === 'cancel'
      ? command.ids.map((id) => cancelMarker(id, now))
      : command.action === 'limit'
        ? [{ type: 'limit', origin: command.origin, at, limit: command.limit }]
        : [
            command.action === 'pause'
              ? { type: 'pause', origin: command.origin, at, by: 'operator' }
              : { type: 'resume', origin: command.origin, at },
          ];
  await writeMarkers(config, markers);
  const done =
    command.action === 'cancel'
      ? `cancel marker stored for ${command.ids.length} callback(s)`
      : command.action === 'limit'
        ? `${command.origin} ${command.limit === null ? 'limit cleared' : `limited to ${describeLimit(command.limit)}`} (fleet-wide)`
        : `${command.origin} ${command.action === 'pause' ? 'paused' : 'resumed'}`;
  process.stdout.write(`${done}\n`);
  return 0;
}

/**
 * Runs `use` on a connection once the prefix's control stream is known to exist (checked passively):
 * a mistyped TOPOLOGY_PREFIX is a `CR_ERR_CONFIG`, never a new stream; no broker, `CR_ERR_BROKER_UNREACHABLE`.
 */
async function withControlStream<T>(config: RelayConfig, use: (connection: ChannelModel, queue: string) => Promise<T>): Promise<T> {
  const queue = topologyNames(config.topologyPrefix).controlQueue;
  const { connection } = await connectFirst(amqpUrls(config.amqpUrl));
  try {
    const probe = await openChannel(connection);
    await probe.checkQueue(queue).catch((error: unknown) => {
      throw new RelayError(
        'CR_ERR_CONFIG',
        `TOPOLOGY_PREFIX: the control stream "${queue}" does not exist (value was "${config.topologyPrefix}"; a worker or \`callback-relay topology\` declares it)`,
        { cause: error },
      );
    });
    return await use(connection, queue);
  } finally {
    await connection.close().catch(() => {});
  }
}

function writeMarkers(config: RelayConfig, markers: ControlMarker[]): Promise<void> {
  return withControlStream(config, async (connection, queue) => {
    const channel = await connection.createConfirmChannel();
    channel.on('error', () => {});
    await publishMarkers(fixedChannel(channel), queue, markers, config.publishTimeout);
  });
}

/**
 * Reads P.control as a worker does, its sync marker included: over AMQP 0-9-1 a stream has no
 * read-only end to read up to (a passive declare's count is a statistic refreshed every few
 * seconds; a consumer just waits at the end), docs/control.md.
 */
async function listPaused(config: RelayConfig, json: boolean): Promise<number> {
  await withControlStream(config, async () => {});
  const names = topologyNames(config.topologyPrefix);
  const logger = createLogger('warn', 'callback-relay-target');
  const reader = await startControlReader({
    urls: amqpUrls(config.amqpUrl),
    names,
    logger,
    clock: Date.now,
    publishTimeoutMs: config.publishTimeout,
    declare: false,
  });
  try {
    if (!reader.readToPresent)
      throw new RelayError(
        'CR_ERR_PUBLISH_TIMEOUT',
        `the control stream "${names.controlQueue}" was not read to its end in time: the list would be incomplete`,
      );
    process.stdout.write(`${formatTargets(reader.pausedOrigins(), reader.originLimits(), json)}\n`);
    return 0;
  } finally {
    await reader.close();
  }
}
