import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import amqplib, { type Channel, type ChannelModel } from 'amqplib';
import { afterEach, expect, inject, it } from 'vitest';
import { isNotFound } from '../../src/amqp/broker-errors.js';
import { createLogger } from '../../src/logger.js';
import { declareOnce } from '../../src/topology/connect-topology.js';
import { declaredNames } from '../../src/topology/declare-list.js';
import { topologyDeclarations } from '../../src/topology/declare-topology.js';
import { deleteTopologyAt, teardownNames } from '../../src/topology/teardown.js';
import { topologyNames, type TopologyNames } from '../../src/topology/topology-names.js';
import { describeEachMode } from '../support/modes.js';
import { randomPrefix, testConfig } from '../support/relay.js';

const run = promisify(execFile);

/** `npm run topology` with `args`, on its own prefix; resolves with the exit code and output. */
async function topologyCli(prefix: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = {
    ...process.env,
    AMQP_URL: inject('amqpUrl'),
    TOPOLOGY_PREFIX: prefix,
    DELAY_MODE: 'queues',
    LANES: '2',
    LOG_LEVEL: 'silent',
  };
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
    const broker = {
      queueType: config.queueType,
      deliveryLimit: config.deliveryLimit,
      broker: topology.broker,
      history: { maxAge: config.historyMaxAge },
    };
    const declared = declaredNames(topologyDeclarations({ names: topology.names, mode, ...broker }));
    const queues = mode === 'plugin' ? [...declared.queues, topology.names.dueQueue] : declared.queues;
    for (const queue of queues) expect(await exists((ch) => ch.checkQueue(queue)), queue).toBe(true);
    for (const exchange of declared.exchanges) expect(await exists((ch) => ch.checkExchange(exchange)), exchange).toBe(true);

    await deleteTopologyAt(topology.url, topology.names);

    expect(teardownNames(topology.names).queues).toEqual(expect.arrayContaining(queues));
    await expectNothingLeft(topology.names);
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
  expect(await topologyCli(prefix, ['delete', '--yes'])).toMatchObject({
    code: 0,
    stdout: expect.stringContaining(`deleted the topology of prefix "${prefix}"`),
  });
  await expectNothingLeft(names);
});
