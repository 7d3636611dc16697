import amqplib from 'amqplib';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { inspectBroker } from '../../src/topology/connect-topology.js';
import { declareDueQueue } from '../../src/topology/declare-topology.js';
import { topologyNames } from '../../src/topology/topology-names.js';
import { runBeforeStop } from '../support/before-stop.js';
import { findRabbitmqServer, startLocalBroker, type LocalNode } from '../support/local-broker.js';
import { sleep } from '../support/modes.js';
import { restartableBroker } from '../support/restartable-broker.js';
import { randomPrefix } from '../support/relay.js';

// The harness's container when the run has one: the rabbitmq/ image of the series under test, whose
// entrypoint runs before-stop.sh itself on a container restart (stop-in-order.sh). Otherwise a node of
// its own (it is stopped), started with the plugin when RABBITMQ_PLUGINS_DIR offers it, and the test
// runs before-stop.sh against it as the image would.
const bin = findRabbitmqServer();
let broker: { url: string; restart(): Promise<void>; stop(): Promise<void>; beforeStop: () => Promise<void> } | undefined;
let hasPlugin = false;
beforeAll(async () => {
  const shared = inject('brokerSource') === 'testcontainers' ? await restartableBroker() : undefined;
  if (shared?.restart) {
    broker = { url: shared.url, restart: shared.restart, stop: shared.stop, beforeStop: async () => {} };
  } else if (bin) {
    const node: LocalNode = await startLocalBroker(bin);
    broker = {
      ...node,
      beforeStop: async () => {
        await runBeforeStop(node, bin);
      },
    };
  }
  if (broker) hasPlugin = (await inspectBroker(broker.url)).hasDelayedPlugin;
});
afterAll(async () => {
  await broker?.stop();
});

/** Due times this far apart, over this long: the stop (script, SIGTERM, shutdown) falls inside. */
const STEP_MS = 5;
const SPAN_MS = 10_000;

// On a stop, the node shuts its classic queues down before the plugin's scheduler; a message falling
// due in between went to a P.due that was gone and was deleted from the plugin's store (lost). With
// rabbitmq/before-stop.sh run first, such messages wait in the store and fall due once the node is
// back. Without the script this loses a few messages at every restart. docs/plugin-mode.md.
it('delayed messages that fall due while the node stops reach P.due after the restart when before-stop.sh ran first', async ({ skip }) => {
  if (!broker) return skip('no broker to restart: neither a harness container nor rabbitmq-server for a node of our own');
  if (!hasPlugin)
    return skip('broker lacks x-delayed-message (RABBITMQ_PLUGINS_DIR loads it into a node; DELAYED_PLUGIN=on builds it into the image)');
  const names = topologyNames(randomPrefix());
  const connection = await amqplib.connect(broker.url);
  const channel = await connection.createConfirmChannel();
  await channel.assertExchange(names.exchange, 'x-delayed-message', { durable: true, arguments: { 'x-delayed-type': 'direct' } });
  await declareDueQueue(channel, names);
  const firstDue = Date.now() + 500;
  const ids: string[] = [];
  for (let dueAt = firstDue; dueAt < firstDue + SPAN_MS; dueAt += STEP_MS) {
    const id = `due-${dueAt - firstDue}`;
    ids.push(id);
    channel.publish(names.exchange, `${names.dueRoutingKey}.0`, Buffer.from(id), {
      persistent: true,
      messageId: id,
      headers: { 'x-delay': dueAt - Date.now() },
    });
  }
  await channel.waitForConfirms();
  await connection.close();
  await sleep(firstDue + 1_000 - Date.now());

  await broker.beforeStop();
  const stoppedAt = Date.now();
  await broker.restart();
  // Otherwise the stop fell outside the due times and the test proved nothing.
  expect(stoppedAt - firstDue, 'the stop came after the last due time: the machine is too slow for this test').toBeLessThan(
    SPAN_MS - 1_000,
  );

  const after = await amqplib.connect(broker.url);
  const reader = await after.createChannel();
  const deadline = Date.now() + Math.max(0, firstDue + SPAN_MS - Date.now()) + 30_000;
  while ((await reader.checkQueue(names.dueQueue)).messageCount < ids.length && Date.now() < deadline) await sleep(200);
  const arrived = new Set<string>();
  for (
    let message = await reader.get(names.dueQueue, { noAck: true });
    message;
    message = await reader.get(names.dueQueue, { noAck: true })
  )
    arrived.add(message.content.toString());
  await after.close();
  expect(ids.filter((id) => !arrived.has(id))).toEqual([]);
  // A container restart (the image's stop in order, then a boot) takes about 30 s on 2 cores, on top of the
  // 10 s of due times and the wait for them: more than the suite's default 120 s on a loaded machine.
}, 240_000);
