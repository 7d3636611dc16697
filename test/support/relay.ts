import { randomBytes } from 'node:crypto';
import amqplib, { type Channel, type ChannelModel, type GetMessage } from 'amqplib';
import { inject } from 'vitest';
import { loadConfig, type RelayConfig } from '../../src/config/load-config.js';
import { createWorker, type Worker, type WorkerDeps } from '../../src/consumer/worker.js';
import { createLogger } from '../../src/logger.js';
import { createPublisher, type CallbackPublisher } from '../../src/producer/publisher.js';
import { declareOnce } from '../../src/topology/connect-topology.js';
import { deleteTopology } from '../../src/topology/teardown.js';
import { topologyNames, type TopologyNames } from '../../src/topology/topology-names.js';

/** A relay under test on its own random topology prefix, with a side connection to inspect queues. */
export interface RelayFixture {
  config: RelayConfig;
  names: TopologyNames;
  publisher: CallbackPublisher;
  /** Starts an in-process worker (stopped by `cleanup`). */
  startWorker(deps?: WorkerDeps, overrides?: Partial<RelayConfig>): Promise<Worker>;
  /** Raw channel for inspection and for publishing hand-made messages. */
  channel: Channel;
  messageCount(queue: string): Promise<number>;
  /** Polls until P.dead holds `count` messages. */
  waitForDead(count: number, timeoutMs?: number): Promise<void>;
  /** Takes every message out of P.dead. */
  drainDead(): Promise<GetMessage[]>;
  cleanup(): Promise<void>;
}

export const randomPrefix = (): string => `t-${randomBytes(4).toString('hex')}`;

export function testConfig(env: Record<string, string> = {}): RelayConfig {
  return loadConfig({
    AMQP_URL: inject('amqpUrl'),
    TOPOLOGY_PREFIX: randomPrefix(),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    RETRY_JITTER: '0',
    HTTP_TIMEOUT: '2s',
    DRAIN_TIMEOUT: '3s',
    METRICS_PORT: '0',
    // One lane, so tests that look into P.work find every first attempt there; the lane tests set LANES.
    LANES: '1',
    // The test receivers listen on loopback, which the default TARGET_POLICY=strict refuses.
    TARGET_ALLOW: '127.0.0.0/8',
    ...env,
  });
}

/**
 * A relay on a fresh prefix. Its topology is declared first, as the admin step (`callback-relay
 * topology`) does: publishers declare nothing. `declare: false` leaves the prefix empty.
 */
export async function startRelay(env: Record<string, string> = {}, options: { declare?: boolean } = {}): Promise<RelayFixture> {
  const config = testConfig(env);
  const names = topologyNames(config.topologyPrefix, config.lanes, config.orderedShards);
  const logger = createLogger(config.logLevel);
  if (options.declare !== false) await declareOnce(config, logger);
  const publisher = createPublisher(config, logger);
  const workers: Worker[] = [];
  const connection: ChannelModel = await amqplib.connect(config.amqpUrl);
  const channel = await connection.createChannel();
  let closed = false;
  const messageCount = async (queue: string): Promise<number> => (await channel.checkQueue(queue)).messageCount;
  return {
    config,
    names,
    publisher,
    channel,
    messageCount,
    async startWorker(deps = {}, overrides = {}) {
      const worker = createWorker({ ...config, ...overrides }, logger, deps);
      workers.push(worker);
      await worker.start();
      return worker;
    },
    async waitForDead(count, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while ((await messageCount(names.deadQueue).catch(() => 0)) < count) {
        if (Date.now() > deadline) throw new Error(`P.dead did not reach ${count} messages within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async drainDead() {
      const messages: GetMessage[] = [];
      for (
        let message = await channel.get(names.deadQueue, { noAck: true });
        message;
        message = await channel.get(names.deadQueue, { noAck: true })
      ) {
        messages.push(message);
      }
      return messages;
    },
    async cleanup() {
      if (closed) return;
      closed = true;
      await Promise.all(workers.map((worker) => worker.stop()));
      await publisher.close();
      await deleteTopology(channel, names);
      await connection.close();
    },
  };
}

export { deleteTopology };
