import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import amqplib, { type Channel, type ChannelModel, type ConfirmChannel } from 'amqplib';
import pino from 'pino';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { replyCode } from '../../src/amqp/broker-errors.js';
import type { RelayConfig } from '../../src/config/load-config.js';
import { startConsole } from '../../src/console/start-console.js';
import { createWorker, type Worker } from '../../src/consumer/worker.js';
import { startIngest, type RunningIngest } from '../../src/ingest/start-ingest.js';
import { createPublisher, type CallbackPublisher } from '../../src/producer/publisher.js';
import { accountsFor, type Role } from '../../src/topology/accounts.js';
import { rabbitmqctlCommands, rabbitmqctlRemoval } from '../../src/topology/account-formats.js';
import { declareOnce } from '../../src/topology/connect-topology.js';
import { deleteTopology } from '../../src/topology/teardown.js';
import {
  orderBucket,
  orderedRoute,
  orderedRoutingKey,
  orderedShard,
  topologyNames,
  type TopologyNames,
} from '../../src/topology/topology-names.js';
import { asUser, brokerCtl } from '../support/broker-ctl.js';
import { cli } from '../support/cli.js';
import { describeEachMode, type TestMode } from '../support/modes.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { randomPrefix, testConfig, type RelayFixture } from '../support/relay.js';

// One broker account per role (src/topology/accounts.ts), created with what `callback-relay accounts`
// prints, each process running with its own: the broker, not the relay, refuses whatever a role may not do.

const ctl = brokerCtl();
const INGEST_TOKEN = 'least-privilege-ingest-token';
const CONSOLE_TOKEN = 'lp-Xq7Rk2Vn9Wd4Tz8Bm3Yc6Hs1Jf5Lg0';

/** A logger whose warnings and errors are kept, to show that no part met a refusal of its own. */
function keptLogger(kept: string[]): pino.Logger {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      kept.push(chunk.toString());
      done();
    },
  });
  return pino({ level: 'warn' }, sink);
}

/** Opens a channel as `connection`'s user, runs `operation` on it, and resolves with the broker's reply code once it closes the channel. */
async function replyTo(connection: ChannelModel, operation: (channel: ConfirmChannel) => unknown): Promise<number | undefined> {
  const channel = await connection.createConfirmChannel();
  const closed = new Promise<unknown>((resolve) => channel.once('error', resolve));
  try {
    await Promise.resolve(operation(channel));
    // A publish is refused asynchronously: the confirm never comes, the channel closes.
    await channel.waitForConfirms();
  } catch {
    // The error of interest is the channel's.
  }
  const error = await Promise.race([closed, new Promise((resolve) => setTimeout(() => resolve(undefined), 5_000))]);
  await channel.close().catch(() => {});
  return replyCode(error);
}

/**
 * Runs `operation` on a channel of `connection`'s user and resolves with the broker's reply code if it
 * closed the channel for it, else undefined (allowed): a passive declare after it is a round trip that
 * a refusal has closed the channel before.
 */
async function refusalOf(
  connection: ChannelModel,
  exchange: string,
  operation: (channel: ConfirmChannel) => unknown,
): Promise<number | undefined> {
  const channel = await connection.createConfirmChannel();
  let refusal: unknown;
  channel.on('error', (error: unknown) => (refusal = error));
  try {
    await Promise.resolve(operation(channel));
    await channel.waitForConfirms();
    await channel.checkExchange(exchange);
  } catch (error) {
    refusal ??= error;
  }
  await channel.close().catch(() => {});
  return refusal === undefined ? undefined : (replyCode(refusal) ?? -1);
}

describeEachMode('least privilege: one broker account per role', (mode: TestMode) => {
  const prefix = randomPrefix();
  const base = inject('amqpUrl');
  const accounts = accountsFor(prefix, mode).map((account) => ({ ...account, password: randomBytes(12).toString('hex') }));
  const url = (role: Role): string => {
    const { user, password } = accounts.find((account) => account.role === role)!;
    return asUser(base, user, password);
  };
  const configFor = (role: Role, env: Record<string, string> = {}): RelayConfig =>
    testConfig({ TOPOLOGY_PREFIX: prefix, DELAY_MODE: mode, AMQP_URL: url(role), HISTORY: 'on', ...env });
  const names: TopologyNames = topologyNames(prefix, 1);
  const warnings: string[] = [];
  let receiver: Receiver;
  let worker: Worker;
  let publisher: CallbackPublisher;
  let guest: ChannelModel;
  let inspect: Channel;

  beforeAll(async () => {
    if (!ctl) return;
    for (const args of rabbitmqctlCommands(accounts, '/')) await ctl(args);
    guest = await amqplib.connect(base);
    inspect = await guest.createChannel();
    // Paths under /own-fate/ fail, for the forged retry state below.
    receiver = await startReceiver((request) => ({ status: request.path.startsWith('/own-fate/') ? 500 : 200 }));
    // The one-off topology step, with the admin account.
    await declareOnce(configFor('admin'), keptLogger(warnings));
    worker = createWorker(configFor('worker'), keptLogger(warnings));
    await worker.start();
    publisher = createPublisher(configFor('producer'), keptLogger(warnings));
  }, 120_000);

  afterAll(async () => {
    if (!ctl) return;
    await publisher?.close();
    await worker?.stop();
    await receiver?.close();
    if (inspect) await deleteTopology(inspect, names);
    await guest?.close();
    for (const args of rabbitmqctlRemoval(accounts)) await ctl(args).catch(() => {});
  }, 60_000);

  it.skipIf(ctl === undefined)(
    'the producer publishes callbacks, now and with deliverAt, and the worker delivers them, each with its own account',
    async () => {
      const now = await publisher.publish({ url: `${receiver.origin}/producer/now`, body: 1 });
      const later = await publisher.publish(
        { url: `${receiver.origin}/producer/later`, body: 2 },
        { deliverAt: new Date(Date.now() + 2_000) },
      );
      await receiver.waitFor((requests) => requests.some((r) => r.path === '/producer/later'), 20_000);
      const delivered = receiver.requests.filter((r) => r.path.startsWith('/producer/'));
      expect(delivered.map((r) => [r.path, r.headers['webhook-id']])).toEqual([
        ['/producer/now', now.id],
        ['/producer/later', later.id],
      ]);
    },
    60_000,
  );

  it.skipIf(ctl === undefined)(
    'the broker refuses (403) every write of the producer but its callbacks, and every read, declare and delete; the fleet is unaffected',
    async () => {
      const producer = await amqplib.connect(url('producer'));
      const body = Buffer.from(JSON.stringify({ url: `${receiver.origin}/forged`, body: 0 }));
      try {
        const attempts: Record<string, (channel: ConfirmChannel) => unknown> = {
          'write a marker to P.control': (ch) => ch.publish('', names.controlQueue, Buffer.from('{"type":"cancel","id":"x"}')),
          'write a heartbeat to P.presence': (ch) => ch.publish(names.presenceExchange, '', Buffer.from('{"id":"fake","kind":"beat"}')),
          'write an event to P.events': (ch) => ch.publish(names.eventsExchange, 'delivered', Buffer.from('{}')),
          'write to P.dead': (ch) => ch.publish('', names.deadQueue, body),
          'write to a work queue directly': (ch) => ch.publish('', names.workQueue, body),
          'read P.dead (get)': (ch) => ch.get(names.deadQueue),
          'read a work queue (consume)': (ch) => ch.consume(names.workQueue, () => {}),
          'read P.control (consume)': (ch) => ch.prefetch(10).then(() => ch.consume(names.controlQueue, () => {})),
          'purge P.dead': (ch) => ch.purgeQueue(names.deadQueue),
          'declare a queue': (ch) => ch.assertQueue(`${prefix}.forged`, { durable: true }),
          'declare a server-named queue': (ch) => ch.assertQueue('', { exclusive: true }),
          'declare an exchange': (ch) => ch.assertExchange(`${prefix}.forged`, 'fanout'),
          'bind a queue': (ch) => ch.bindQueue(names.deadQueue, names.exchange, 'deliver'),
          'delete the work queue': (ch) => ch.deleteQueue(names.workQueue),
          'delete P.dead': (ch) => ch.deleteQueue(names.deadQueue),
          'delete exchange P': (ch) => ch.deleteExchange(names.exchange),
          'delete P.control': (ch) => ch.deleteQueue(names.controlQueue),
        };
        const replies: Record<string, number | undefined> = {};
        for (const [what, operation] of Object.entries(attempts)) replies[what] = await replyTo(producer, operation);
        expect(replies).toEqual(Object.fromEntries(Object.keys(attempts).map((what) => [what, 403])));
      } finally {
        await producer.close().catch(() => {});
      }
      // Nothing was forged, nothing lost: the topology is whole and a callback after the attempts is delivered.
      expect(receiver.requests.filter((r) => r.path === '/forged')).toEqual([]);
      await inspect.checkExchange(names.exchange);
      await inspect.checkQueue(names.workQueue);
      const after = await publisher.publish({ url: `${receiver.origin}/producer/after`, body: 3 });
      await receiver.waitFor((requests) => requests.some((r) => r.path === '/producer/after'), 20_000);
      expect(receiver.requests.find((r) => r.path === '/producer/after')!.headers['webhook-id']).toBe(after.id);
      expect((await inspect.checkQueue(names.deadQueue)).messageCount).toBe(0);
    },
    90_000,
  );

  it.skipIf(ctl === undefined)(
    'ordered delivery: the worker consumes the shards, writes and reads their logs and routes ordered retries; the producer publishes ordered callbacks, nothing more',
    async () => {
      const bucket = orderBucket('lp-key');
      const shard = names.orderedQueues[orderedShard(bucket, names.orderedQueues.length)]!;
      const log = names.orderedLogs[0]!;
      const body = Buffer.from(JSON.stringify({ url: `${receiver.origin}/ordered/forged`, body: 0, orderKey: 'lp-key' }));
      const consumeOnce = (queue: string, args?: Record<string, unknown>) => async (ch: ConfirmChannel) => {
        await ch.prefetch(1);
        const { consumerTag } = await ch.consume(queue, () => {}, { noAck: false, ...(args && { arguments: args }) });
        await ch.cancel(consumerTag);
      };
      const workerConnection = await amqplib.connect(url('worker'));
      const producerConnection = await amqplib.connect(url('producer'));
      try {
        const delayed = orderedRoute(names, mode, 2_000, bucket, Date.now());
        const allowed: Record<string, (channel: ConfirmChannel) => unknown> = {
          'consume a shard': consumeOnce(shard),
          'publish ordered.<bucket> on P': (ch) =>
            ch.publish(names.exchange, orderedRoutingKey(bucket), body, { headers: { 'x-test': 1 } }),
          'publish an ordered retry by its delay route': (ch) =>
            ch.publish(delayed.exchange, delayed.routingKey, body, { headers: delayed.headers }),
          'write a shard log (default exchange)': (ch) => ch.publish('', log, Buffer.from('{}')),
          'read a shard log': consumeOnce(log, { 'x-stream-offset': 'first' }),
        };
        const workerReplies: Record<string, number | undefined> = {};
        for (const [what, operation] of Object.entries(allowed))
          workerReplies[what] = await refusalOf(workerConnection, names.exchange, operation);
        expect(workerReplies).toEqual(Object.fromEntries(Object.keys(allowed).map((what) => [what, undefined])));

        const producerReplies: Record<string, number | undefined> = {};
        const refused: Record<string, (channel: ConfirmChannel) => unknown> = {
          'consume a shard': consumeOnce(shard),
          'write a shard log (default exchange)': (ch) => ch.publish('', log, Buffer.from('{}')),
          'read a shard log': consumeOnce(log, { 'x-stream-offset': 'first' }),
          'write to a shard directly': (ch) => ch.publish('', shard, body),
        };
        for (const [what, operation] of Object.entries(refused))
          producerReplies[what] = await refusalOf(producerConnection, names.exchange, operation);
        expect(producerReplies).toEqual(Object.fromEntries(Object.keys(refused).map((what) => [what, 403])));
      } finally {
        await workerConnection.close().catch(() => {});
        await producerConnection.close().catch(() => {});
      }
      // The library publisher, with the producer account: into its key's shard, which the worker (its own
      // account) consumes and delivers from.
      const published = await publisher.publish({ url: `${receiver.origin}/ordered/published`, body: 1, orderKey: 'lp-key' });
      await receiver.waitFor((requests) => requests.some((r) => r.path === '/ordered/published'), 20_000);
      expect(receiver.requests.find((r) => r.path === '/ordered/published')!.headers['webhook-id']).toBe(published.id);
    },
    60_000,
  );

  it.skipIf(ctl === undefined)(
    'the ingest works end to end with only its own account',
    async () => {
      let ingest: RunningIngest | undefined;
      try {
        ingest = await startIngest(configFor('ingest', { INGEST_TOKENS: INGEST_TOKEN }), keptLogger(warnings), 0);
        const post = async (payload: unknown): Promise<{ status: number; id: string }> => {
          const res = await fetch(`${ingest!.origin}/v1/callbacks`, {
            method: 'POST',
            headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'application/json' },
            body: JSON.stringify(payload),
          });
          return { status: res.status, id: ((await res.json()) as { id: string }).id };
        };
        const now = await post({ url: `${receiver.origin}/ingest/now`, body: 1 });
        const later = await post({ url: `${receiver.origin}/ingest/later`, body: 2, delay: '1s' });
        expect([now.status, later.status]).toEqual([202, 202]);
        await receiver.waitFor(
          (requests) => ['/ingest/now', '/ingest/later'].every((path) => requests.some((r) => r.path === path)),
          20_000,
        );
        expect(
          receiver.requests
            .filter((r) => r.path.startsWith('/ingest/'))
            .map((r) => r.headers['webhook-id'])
            .sort(),
        ).toEqual([now.id, later.id].sort());
      } finally {
        await ingest?.close();
      }
    },
    60_000,
  );

  it.skipIf(ctl === undefined)(
    'the console and the operator commands work end to end with only the console account',
    async () => {
      const operator = { config: configFor('console') } as RelayFixture;
      // A callback canceled before it falls due: parked as canceled, listed, replayed and delivered.
      const { id } = await publisher.publish({ url: `${receiver.origin}/console/canceled`, body: 1 }, { delay: 10_000 });
      const cancel = await cli(operator, ['cancel', id]);
      expect(cancel.stderr).toBe('');
      expect(cancel.code).toBe(0);
      expect(receiver.requests.filter((r) => r.path === '/console/canceled')).toEqual([]);
      for (
        const deadline = Date.now() + 40_000;
        (await inspect.checkQueue(names.deadQueue)).messageCount < 1;
        await new Promise((resolve) => setTimeout(resolve, 200))
      ) {
        if (Date.now() > deadline) throw new Error('the canceled callback was not parked within 40 s');
      }
      const list = await cli(operator, ['dlq', 'list', '--json']);
      expect(list.code).toBe(0);
      expect(JSON.parse(list.stdout)).toMatchObject([{ id, reason: 'canceled' }]);
      const history = await cli(operator, ['history', id, '--json']);
      expect(history.code).toBe(0);
      expect(JSON.parse(history.stdout)).toEqual(
        expect.arrayContaining([expect.objectContaining({ id, type: 'canceled', reason: 'canceled' })]),
      );
      const targets = await cli(operator, ['target', 'list', '--json']);
      expect(targets.code).toBe(0);
      const replay = await cli(operator, ['dlq', 'replay', '--id', id]);
      expect(replay.code).toBe(0);
      await receiver.waitFor((requests) => requests.some((r) => r.path === '/console/canceled'), 20_000);
      // The web console: its pages read P.control, P.history and the queue depths.
      const running = await startConsole(configFor('console', { CONSOLE_TOKENS: `ops:${CONSOLE_TOKEN}` }), keptLogger(warnings), {
        port: 0,
      });
      try {
        for (const page of ['/', '/targets', '/dead-letters']) {
          const res = await fetch(`${running.origin}${page}`, { headers: { authorization: `Bearer ${CONSOLE_TOKEN}` } });
          expect([page, res.status]).toEqual([page, 200]);
        }
      } finally {
        await running.close();
      }
      expect(warnings.filter((line) => /ACCESS_REFUSED|403/.test(line))).toEqual([]);
    },
    300_000,
  );

  it.skipIf(ctl === undefined)(
    'forged x-callback-* state headers from the producer change only the fate of the callback that carries them',
    async () => {
      const producer = await amqplib.connect(url('producer'));
      try {
        const channel = await producer.createConfirmChannel();
        // Retry state as a worker writes it, claimed by a producer: its last attempt, deferred the most
        // times, sent back unsettled often, replayed, due in an hour.
        const forged = {
          'x-callback-attempt': 99,
          'x-callback-deferrals': 16,
          'x-callback-held-since': new Date(Date.now() - 3_600_000).toISOString(),
          'x-callback-returns': 1,
          'x-replayed-at': new Date().toISOString(),
          'x-callback-due-at': Date.now() + 3_600_000,
          'x-callback-reason': 'canceled',
        };
        const content = Buffer.from(JSON.stringify({ id: 'forged-own', url: `${receiver.origin}/own-fate/forged`, body: 0 }));
        channel.publish(names.exchange, names.routingKey, content, {
          persistent: true,
          contentType: 'application/json',
          messageId: 'forged-own',
          headers: forged,
        });
        await channel.waitForConfirms();
        await channel.close();
      } finally {
        await producer.close();
      }
      const other = await publisher.publish({ url: `${receiver.origin}/producer/beside-forged`, body: 1 });
      // Its own fate: one attempt, then parked as exhausted (attempt 99, past MAX_ATTEMPTS), not held an hour.
      for (
        const deadline = Date.now() + 30_000;
        !(await inspect.checkQueue(names.deadQueue)).messageCount;
        await new Promise((resolve) => setTimeout(resolve, 200))
      ) {
        if (Date.now() > deadline) throw new Error('the forged callback was not parked within 30 s');
      }
      const parked = await inspect.get(names.deadQueue, { noAck: true });
      expect(parked && [parked.properties.messageId, parked.properties.headers?.['x-callback-reason']]).toEqual([
        'forged-own',
        'exhausted',
      ]);
      expect(receiver.requests.filter((r) => r.path === '/own-fate/forged')).toHaveLength(1);
      // Everyone else's: delivered as usual, nothing else parked.
      await receiver.waitFor((requests) => requests.some((r) => r.path === '/producer/beside-forged'), 20_000);
      expect(receiver.requests.find((r) => r.path === '/producer/beside-forged')!.headers['webhook-id']).toBe(other.id);
      expect((await inspect.checkQueue(names.deadQueue)).messageCount).toBe(0);
    },
    60_000,
  );
});
