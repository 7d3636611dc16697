import { publishConfirmed } from '../amqp/publish-confirmed.js';
import { connectFirst } from '../amqp/connect.js';
import { amqpUrls } from '../config/amqp-urls.js';
import { loadConfig } from '../config/load-config.js';
import { RelayError } from '../errors.js';
import { isValidId } from '../message/callback.js';
import { HEADER } from '../message/headers.js';
import { orderBucket, orderedRoutingKey, topologyNames } from '../topology/topology-names.js';

export const ORDERED_USAGE = `callback-relay ordered release <orderKey>

  Moves a key stopped at a parked callback (ORDERED_ON_DEAD=stop) on past it: its next callbacks run,
  and the parked one stays in P.dead. Replaying the parked one instead (callback-relay dlq replay)
  delivers it first and moves the key on after it. A key that is not stopped is left as it is.

P = TOPOLOGY_PREFIX. Connects with AMQP_URL. Exit status: 0 sent, 1 failed, 2 bad arguments.`;

/**
 * Runs `callback-relay ordered …`. The release travels into the key's shard, where the worker that owns
 * the shard (its single active consumer) reads it in turn with the shard's callbacks.
 */
export async function orderedCommand(argv: string[]): Promise<number> {
  const [action, key, ...extra] = argv;
  if (action === undefined || action === 'help' || action === '--help' || action === '-h') {
    process.stdout.write(`${ORDERED_USAGE}\n`);
    return action === undefined ? 2 : 0;
  }
  if (action !== 'release' || key === undefined || extra.length > 0 || !isValidId(key)) {
    process.stderr.write(`usage: ${ORDERED_USAGE.split('\n')[0]}\n  (<orderKey>: 1-255 printable ASCII characters)\n`);
    return 2;
  }
  const config = loadConfig();
  const names = topologyNames(config.topologyPrefix, config.lanes, config.orderedShards);
  const { connection } = await connectFirst(amqpUrls(config.amqpUrl));
  try {
    const channel = await connection.createConfirmChannel();
    channel.on('error', () => {});
    const route = { exchange: names.exchange, routingKey: orderedRoutingKey(orderBucket(key)) };
    const headers = { [HEADER.orderRelease]: key };
    await publishConfirmed(channel, route, Buffer.alloc(0), { headers, persistent: true, mandatory: true }, config.publishTimeout);
    process.stdout.write(`release sent for ordered key ${JSON.stringify(key)}\n`);
    return 0;
  } catch (error) {
    const code = error instanceof RelayError ? ` (${error.code})` : '';
    process.stderr.write(`could not send the release${code}: ${(error as Error).message}\n`);
    return 1;
  } finally {
    await connection.close().catch(() => {});
  }
}
