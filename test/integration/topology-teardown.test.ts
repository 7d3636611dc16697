import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import amqplib, { type Channel, type ChannelModel } from 'amqplib';
import { afterEach, expect, inject, it } from 'vitest';
import { isNotFound } from '../../src/amqp/broker-errors.js';
import { createLogger } from '../../src/logger.js';
import { createPublisher } from '../../src/producer/publisher.js';
import { applyTopology, connectTopology, declareOnce } from '../../src/topology/connect-topology.js';
import { applyDeclarations, declaredNames } from '../../src/topology/declare-list.js';
import { unmarkDeclared } from '../../src/topology/declared-marker.js';
import { topologyDeclarations } from '../../src/topology/declare-topology.js';
import { deleteTopologyAt, teardownNames } from '../../src/topology/teardown.js';
import { topologyNames, type TopologyNames } from '../../src/topology/topology-names.js';
import { describeEachMode } from '../support/modes.js';
import { randomPrefix, testConfig } from '../support/relay.js';

const run = promisify(execFile);

/** `npm run topology` with `args`, on its own prefix; resolves with the exit code and output. */
async function topologyCli(prefix: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, AMQP_URL: inject('amqpUrl'), TOPOLOGY_PREFIX: prefix, DELAY_MODE: 'queues', LANES: '2', LOG_LEVEL: 'silent' };
  try {
    return { code: 0, ...(await run(process.execPath, ['--import', 'tsx', 'src/topology/main.ts', ...args], { env })) };
  } catch (error) {
    return error as { code: number; stdout: string; stderr: string };
  }
}

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

/** Not one queue or exchange the teardown knows of is left on the broker. */
async function expectNothingLeft(names: TopologyNames): Promise<void> {
  const { queues, exchanges } = teardownNames(names);
  for (const queue of queues) expect(await exists((ch) => ch.checkQueue(queue)), queue).toBe(false);
  for (const exchange of exchanges) expect(await exists((ch) => ch.checkExchange(exchange)), exchange).toBe(false);
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

    expect(teardownNames(topology.names).queues).toEqual(expect.arrayContaining(queues));
    await expectNothingLeft(topology.names);
  });
});

describeEachMode('a start that finds the topology in place', (mode) => {
  it('declares nothing again after a complete declaration; a queue deleted, other settings or no marker, and it declares the whole list', async () => {
    const config = testConfig({ DELAY_MODE: mode, LANES: '3' });
    const logger = createLogger('silent');
    const resolve = (settings: typeof config) => connectTopology(settings, logger, AbortSignal.timeout(30_000));
    const topology = await resolve(config);
    const start = async (resolved = topology): Promise<boolean> => (await applyTopology(resolved.url, resolved, { unlessDeclared: true })).declared;
    const { names } = topology;
    expect(await start()).toBe(true);
    expect(await start()).toBe(false);

    // A lane deleted takes its bindings with it: the next start declares it, and it is routed to again.
    connection = await amqplib.connect(topology.url);
    const channel = await connection.createConfirmChannel();
    const lane = names.workQueues[1] as string;
    await channel.deleteQueue(lane);
    expect(await start()).toBe(true);
    // Bucket 1 lands in lane 1 of 3.
    channel.publish(names.exchange, 'deliver.1', Buffer.from('{}'), { mandatory: true });
    await channel.waitForConfirms();
    await expect.poll(async () => (await channel.checkQueue(lane)).messageCount).toBe(1);

    // Other settings (HISTORY=on adds a stream and its binding) find another digest, and so does the
    // first again afterwards: each declares its whole list.
    const withHistory = await resolve(testConfig({ DELAY_MODE: mode, LANES: '3', TOPOLOGY_PREFIX: config.topologyPrefix, HISTORY: 'on' }));
    expect(await start(withHistory)).toBe(true);
    expect(await start(withHistory)).toBe(false);
    expect(await start()).toBe(true);

    // A declaration cut short (a reconnect's, the broker gone after its queues and before its
    // bindings): marked before, it is not complete now, and the next start declares the whole list.
    const declarations = topologyDeclarations({ names, mode: topology.mode, queueType: config.queueType, deliveryLimit: config.deliveryLimit, broker: topology.broker });
    const cutShort = await connection.createChannel();
    await unmarkDeclared(cutShort, names.declaredMarkers);
    await applyDeclarations(cutShort, declarations.filter((step) => step.kind !== 'binding'));
    await cutShort.close();
    expect(await start()).toBe(true);
    expect(await start()).toBe(false);

    await deleteTopologyAt(topology.url, names);
    await expectNothingLeft(names);
  });

  it('a publisher\'s declaration marks the topology declared too: a worker that starts after it finds the topology in place', async () => {
    const config = testConfig({ DELAY_MODE: mode, LANES: '2' });
    const publisher = createPublisher(config, createLogger('silent'));
    try {
      await publisher.publish({ url: 'http://127.0.0.1:9/first', body: 1 });
    } finally {
      await publisher.close();
    }
    const topology = await connectTopology(config, createLogger('silent'), AbortSignal.timeout(30_000));
    expect((await applyTopology(topology.url, topology, { unlessDeclared: true })).declared).toBe(false);
    await deleteTopologyAt(topology.url, topology.names);
  });
});

it('npm run topology declares; `delete` asks for --yes, then leaves nothing of the prefix behind', async () => {
  const prefix = randomPrefix();
  const names = topologyNames(prefix, 2);
  expect(await topologyCli(prefix, [])).toMatchObject({ code: 0, stdout: expect.stringContaining('topology ready (delay mode queues)') });
  connection = await amqplib.connect(inject('amqpUrl'));
  const refused = await topologyCli(prefix, ['delete']);
  expect(refused).toMatchObject({ code: 2, stderr: expect.stringContaining('pass --yes') });
  expect(await exists((ch) => ch.checkQueue(names.deadQueue))).toBe(true);
  expect(await topologyCli(prefix, ['delete', '--yes'])).toMatchObject({ code: 0, stdout: expect.stringContaining(`deleted the topology of prefix "${prefix}"`) });
  await expectNothingLeft(names);
});
