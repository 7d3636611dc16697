/**
 * `npx tsx chaos/due-at-stop.ts [--rounds N] [--before-stop]`: the plugin-mode loss across a broker
 * restart, cheaply (about 15 s a round; needs RABBITMQ_PLUGINS_DIR). Each round, on a fresh prefix:
 * a publisher sends 1 s delayed messages to P (confirmed, one every few ms) for 3 s, the broker is
 * restarted while they keep falling due (`--before-stop`: rabbitmq/before-stop.sh first), then
 * P.due is read once every message is due: each confirmed one must be there. No workers run, so what
 * it measures is the broker and the plugin alone. Exits 1 if one was lost. docs/plugin-mode.md.
 */
import { parseArgs } from 'node:util';
import amqplib, { type ConfirmChannel } from 'amqplib';
import { declareDueQueue } from '../src/topology/declare-topology.js';
import { topologyNames, type TopologyNames } from '../src/topology/topology-names.js';
import { installCleanupHandlers, runCleanup } from './cleanup.js';
import { startChaosNode } from './single-node.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, 'before-stop': { type: 'boolean', default: false } } });
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds: a whole number ≥ 1, got ${values.rounds}`);
const DELAY_MS = 1_000;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const say = (line: string): void => void process.stdout.write(`${line}\n`);

/** Publishes delayed messages until `stop()`, through restarts (reconnecting); remembers when each was confirmed. */
function publishUntilStopped(url: string, names: TopologyNames): { confirmedAt: Map<string, number>; stop: () => Promise<void> } {
  const confirmedAt = new Map<string, number>();
  let stopped = false;
  let sent = 0;
  const publishOne = (channel: ConfirmChannel, id: string): Promise<void> =>
    new Promise((resolve, reject) => {
      channel.publish(
        names.exchange,
        `${names.dueRoutingKey}.0`,
        Buffer.from(id),
        { persistent: true, messageId: id, headers: { 'x-delay': DELAY_MS } },
        (error) => (error ? reject(error) : resolve()),
      );
    });
  const loop = (async () => {
    while (!stopped) {
      try {
        const connection = await amqplib.connect(url);
        connection.on('error', () => {});
        const channel = await connection.createConfirmChannel();
        channel.on('error', () => {});
        while (!stopped) {
          const id = `m${(sent += 1)}`;
          await publishOne(channel, id);
          confirmedAt.set(id, Date.now());
          await sleep(5);
        }
        await connection.close().catch(() => {});
      } catch {
        await sleep(200); // the broker is restarting
      }
    }
  })();
  return {
    confirmedAt,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

installCleanupHandlers();
let lostInAll = 0;
try {
  const node = await startChaosNode();
  for (let round = 1; round <= rounds; round += 1) {
    const names = topologyNames(`due-at-stop-${round}-${Date.now()}`);
    const setup = await amqplib.connect(node.url);
    const channel = await setup.createChannel();
    await channel.assertExchange(names.exchange, 'x-delayed-message', { durable: true, arguments: { 'x-delayed-type': 'direct' } });
    await declareDueQueue(channel, names);
    await setup.close();
    const publisher = publishUntilStopped(node.url, names);
    await sleep(3_000);
    const stoppingAt = Date.now();
    await node.restart({ beforeStop: values['before-stop'] });
    await sleep(2_000);
    await publisher.stop();
    await sleep(DELAY_MS + 3_000);
    const reader = await amqplib.connect(node.url);
    const readChannel = await reader.createChannel();
    const arrived = new Set<string>();
    for (let m = await readChannel.get(names.dueQueue, { noAck: true }); m; m = await readChannel.get(names.dueQueue, { noAck: true }))
      arrived.add(m.content.toString());
    await reader.close();
    const lost = [...publisher.confirmedAt].filter(([id]) => !arrived.has(id));
    lostInAll += lost.length;
    const when = lost.map(([id, at]) => `${id} due ${at + DELAY_MS - stoppingAt} ms after the stop began`);
    say(
      `round ${round}: ${publisher.confirmedAt.size} confirmed, ${arrived.size} in P.due, lost ${lost.length}${when.length ? `: ${when.join(', ')}` : ''}`,
    );
  }
  say(
    `${lostInAll === 0 ? 'PASS' : 'FAIL'}: lost ${lostInAll} in ${rounds} restarts${values['before-stop'] ? ' (before-stop.sh first)' : ''}`,
  );
} finally {
  await runCleanup();
}
process.exit(lostInAll === 0 ? 0 : 1);
