import amqplib, { type Channel, type ChannelModel } from 'amqplib';
import { afterEach, expect, it } from 'vitest';
import { isNotFound } from '../../src/amqp/broker-errors.js';
import { createLogger } from '../../src/logger.js';
import { declareOnce } from '../../src/topology/declare-once.js';
import { declaredNames } from '../../src/topology/declare-list.js';
import { topologyDeclarations } from '../../src/topology/declare-topology.js';
import { deleteTopologyAt, teardownNames } from '../../src/topology/teardown.js';
import { describeEachMode } from '../support/modes.js';
import { testConfig } from '../support/relay.js';

let connection: ChannelModel | undefined;

afterEach(async () => {
  await connection?.close().catch(() => {});
  connection = undefined;
});

/** Whether the broker has it: a passive declare on a channel of its own (a miss, 404, closes the channel). */
async function exists(check: (channel: Channel) => Promise<unknown>): Promise<boolean> {
  const channel = await connection!.createChannel();
  channel.on('error', () => {});
  try {
    await check(channel);
    await channel.close();
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

describeEachMode('topology declare and teardown', (mode) => {
  it('declares every entry of the list, and the teardown leaves nothing of the prefix behind', async () => {
    const config = testConfig({ DELAY_MODE: mode, HISTORY: 'on', LANES: '3' });
    const topology = await declareOnce(config, createLogger('silent'));
    connection = await amqplib.connect(topology.url);
    const broker = { queueType: config.queueType, deliveryLimit: config.deliveryLimit, broker: topology.broker, history: { maxAge: config.historyMaxAge } };
    const declared = declaredNames(topologyDeclarations({ names: topology.names, mode, ...broker }));
    const queues = mode === 'plugin' ? [...declared.queues, topology.names.dueQueue] : declared.queues;
    for (const queue of queues) expect(await exists((ch) => ch.checkQueue(queue)), queue).toBe(true);
    for (const exchange of declared.exchanges) expect(await exists((ch) => ch.checkExchange(exchange)), exchange).toBe(true);

    await deleteTopologyAt(topology.url, topology.names);

    const everything = teardownNames(topology.names);
    expect(everything.queues).toEqual(expect.arrayContaining(queues));
    for (const queue of everything.queues) expect(await exists((ch) => ch.checkQueue(queue)), queue).toBe(false);
    for (const exchange of everything.exchanges) expect(await exists((ch) => ch.checkExchange(exchange)), exchange).toBe(false);
  });
});
