import amqplib, { type Channel, type ConsumeMessage } from 'amqplib';
import { expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { createWorker } from '../../src/consumer/worker.js';
import { createLogger } from '../../src/logger.js';
import { createPublisher } from '../../src/producer/publisher.js';
import { deleteTopology } from '../../src/topology/teardown.js';
import { topologyNames } from '../../src/topology/topology-names.js';
import { NO_RESTART, restartableBroker } from '../support/restartable-broker.js';
import { describeEachMode } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { randomPrefix } from '../support/relay.js';

const open = openedInEachTest();

const FINAL = new Set(['delivered', 'dead', 'canceled']);

/**
 * The service's side: a queue of its own bound to P.events, read with manual acks, deduplicated on
 * `message_id`, one final outcome per callback id (what the status-table consumer of docs/events-and-history.md does).
 */
async function statusTable(channel: Channel, eventsExchange: string, queue: string) {
  const seen = new Set<string>();
  const finals = new Map<string, string[]>();
  let duplicates = 0;
  await channel.assertExchange(eventsExchange, 'topic', { durable: true });
  await channel.assertQueue(queue, { durable: true });
  await channel.bindQueue(queue, eventsExchange, '#');
  await channel.consume(queue, (message: ConsumeMessage | null) => {
    if (!message) return;
    const eventId = String(message.properties.messageId);
    if (seen.has(eventId)) duplicates += 1;
    else {
      seen.add(eventId);
      const event = JSON.parse(message.content.toString()) as { id: string; type: string };
      if (FINAL.has(event.type)) finals.set(event.id, [...(finals.get(event.id) ?? []), event.type]);
    }
    channel.ack(message);
  });
  return { finals, duplicates: () => duplicates };
}

describeEachMode('durable outcome events', (mode) => {
  it("a worker SIGKILLed mid-flight: the status table gets every callback's final outcome, and only that one", async () => {
    // /ok answers 200 slowly (deliveries are in flight at the kill), /flaky 503 once then 200, /gone 410.
    const receiver = await open.receiver((r) =>
      r.path.startsWith('/gone')
        ? { status: 410 }
        : r.path.startsWith('/flaky') && r.nth === 1
          ? { status: 503 }
          : { status: 200, delayMs: 500 },
    );
    const relay = await open.relay({
      DELAY_MODE: mode,
      EVENTS: 'durable',
      RETRY_SCHEDULE: '300ms',
      PREFETCH: '10',
      TARGET_CONCURRENCY: '10',
      TARGET_INITIAL_CONCURRENCY: '10',
    });
    const queue = `${relay.config.topologyPrefix}.status`;
    try {
      const table = await statusTable(relay.channel, relay.names.eventsExchange, queue);
      const paths = Array.from({ length: 30 }, (_, i) => (i % 10 === 0 ? `/gone/${i}` : i % 3 === 0 ? `/flaky/${i}` : `/ok/${i}`));
      const ids = await Promise.all(
        paths.map((path, i) => relay.publisher.publish({ url: `${receiver.origin}${path}`, body: i }).then((r) => r.id)),
      );
      const worker = open.worker(relay.config);
      await worker.consuming;
      await receiver.waitFor((r) => r.length >= 10);
      worker.child.kill('SIGKILL');
      await worker.exited;
      await relay.startWorker();
      await receiver.waitFor(() => table.finals.size === ids.length, 60_000);
      // A kill between a retry copy's confirm and the ack runs a callback twice (at least once), so
      // it may end twice, as attempt 1 and 2; both are the same final outcome, never a different one.
      for (const [i, id] of ids.entries())
        expect(new Set(table.finals.get(id)), paths[i]).toEqual(new Set([paths[i]!.startsWith('/gone') ? 'dead' : 'delivered']));
    } finally {
      await relay.channel.deleteQueue(queue);
    }
  });
});

describeEachMode('durable outcome events across a broker restart', (mode) => {
  // The harness's container (the series under test) or a broker of its own: never an external AMQP_URL one.
  it("events of delivered callbacks wait in the service's queue through a broker restart", async ({ skip }) => {
    const broker = await restartableBroker();
    if (!broker?.restart) return skip(NO_RESTART);
    const receiver = await open.receiver(() => ({ status: 200 }));
    const config = loadConfig({
      AMQP_URL: broker.url,
      TOPOLOGY_PREFIX: randomPrefix(),
      DELAY_MODE: mode,
      EVENTS: 'durable',
      LOG_LEVEL: 'silent',
      METRICS_PORT: '0',
      TARGET_ALLOW: '127.0.0.0/8',
    });
    const names = topologyNames(config.topologyPrefix, config.lanes, config.orderedShards);
    const queue = `${config.topologyPrefix}.status`;
    const logger = createLogger('silent');
    try {
      const setup = await amqplib.connect(broker.url);
      const channel = await setup.createChannel();
      await channel.assertExchange(names.eventsExchange, 'topic', { durable: true });
      await channel.assertQueue(queue, { durable: true });
      await channel.bindQueue(queue, names.eventsExchange, 'delivered');
      await setup.close();
      const publisher = createPublisher(config, logger);
      const worker = createWorker(config, logger);
      await worker.start();
      const ids = await Promise.all(
        Array.from({ length: 20 }, (_, i) => publisher.publish({ url: `${receiver.origin}/r/${i}`, body: i }).then((r) => r.id)),
      );
      await receiver.waitFor((r) => r.length >= ids.length, 30_000);
      await worker.stop();
      await publisher.close();
      // Nobody has read the service's queue yet; best-effort (transient) events would not survive this.
      await broker.restart();
      const after = await amqplib.connect(broker.url);
      const reader = await after.createChannel();
      const delivered = new Set<string>();
      for (let message = await reader.get(queue, { noAck: true }); message; message = await reader.get(queue, { noAck: true })) {
        delivered.add((JSON.parse(message.content.toString()) as { id: string }).id);
      }
      expect(delivered).toEqual(new Set(ids));
      await reader.deleteQueue(queue);
      await deleteTopology(reader, names);
      await after.close();
    } finally {
      await broker.stop();
    }
  });
});
