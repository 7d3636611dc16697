import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import amqplib, { type Channel } from 'amqplib';
import { describe, expect, inject, it } from 'vitest';
import { isRelayError } from '../../src/errors.js';
import { pluginModeSkipReason, sleep, testModes, type TestMode } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { loadConfig } from '../../src/config/load-config.js';
import { createLogger } from '../../src/logger.js';
import { createPublisher } from '../../src/producer/publisher.js';
import type { ReceivedRequest, Receiver } from '../support/receiver.js';
import { deleteTopology, testConfig, type RelayFixture } from '../support/relay.js';
import { topologyNames } from '../../src/topology/topology-names.js';
import { declareOnce } from '../../src/topology/connect-topology.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { configEnv } from '../support/worker-process.js';

const run = promisify(execFile);
let relay: RelayFixture | undefined;
let receiver: Receiver | undefined;
const open = openedInEachTest();

type Outcome = { id: string } | { code: string | undefined };

/**
 * Starts `count` publishes at once through a publisher behind `proxy`, calls `onResolved` with the
 * number resolved after each one, and returns every outcome (the id, or the rejection's code).
 */
async function burst(
  relay: RelayFixture,
  proxy: TcpProxy,
  env: Record<string, string>,
  count: number,
  onResolved: (resolved: number) => void,
): Promise<Outcome[]> {
  const config = testConfig({
    TOPOLOGY_PREFIX: relay.config.topologyPrefix,
    AMQP_URL: proxy.url,
    PUBLISH_BUFFER_LIMIT: String(count),
    ...env,
  });
  const publisher = createPublisher(config, createLogger('silent'));
  try {
    await publisher.publish({ url: 'http://127.0.0.1:9/warm-up', id: 'warm-up', body: 0 });
    let resolved = 0;
    return await Promise.all(
      Array.from({ length: count }, (_, i) =>
        publisher.publish({ url: `http://127.0.0.1:9/${i}`, id: `burst-${i}`, body: i }).then(
          (result) => {
            onResolved((resolved += 1));
            return result;
          },
          (error: unknown) => ({ code: isRelayError(error) ? error.code : String(error) }),
        ),
      ),
    );
  } finally {
    await publisher.close();
  }
}

/** The message ids of everything in `queue`, consumed off it. */
async function queuedIds(channel: Channel, queue: string): Promise<Set<string>> {
  const { messageCount } = await channel.checkQueue(queue);
  const ids = new Set<string>();
  let received = 0;
  await new Promise<void>((resolve) => {
    if (messageCount === 0) return resolve();
    void channel.consume(
      queue,
      (message) => {
        if (message) ids.add(String(message.properties.messageId));
        if ((received += 1) === messageCount) resolve();
      },
      { noAck: true },
    );
  });
  return ids;
}

const resolvedIds = (outcomes: Outcome[]): string[] => outcomes.flatMap((outcome) => ('id' in outcome ? [outcome.id] : []));
const rejectionCodes = (outcomes: Outcome[]): Set<string | undefined> =>
  new Set(outcomes.flatMap((outcome) => ('code' in outcome ? [outcome.code] : [])));

describe('producer', () => {
  it('rejects invalid callbacks naming the field and publishes nothing', async () => {
    relay = await open.relay({ MAX_PAYLOAD_BYTES: '1000' });
    await relay.publisher.publish({ url: 'http://127.0.0.1:9/warm-up', body: 1 });
    await expect(relay.publisher.publish({ url: 'ftp://x/y', body: 1 })).rejects.toMatchObject({
      code: 'CR_ERR_INVALID_CALLBACK',
      field: 'url',
    });
    await expect(relay.publisher.publish({ url: 'http://x/', body: 'x'.repeat(2000) })).rejects.toMatchObject({ field: 'body' });
    await expect(relay.publisher.publish({ url: 'http://x/', body: 1, headers: { 'x-a': 'v\r\nInjected: 1' } })).rejects.toMatchObject({
      field: 'headers.x-a',
    });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    await expect(relay.publisher.publish({ url: 'http://x/', body: circular })).rejects.toMatchObject({ field: 'body' });
    await expect(relay.publisher.publish({ url: 'http://x/', body: 1 }, { delay: -5 })).rejects.toMatchObject({ field: 'delay' });
    expect(await relay.messageCount(relay.names.workQueue)).toBe(1);
  });

  it('writes the wire contract: JSON body with id, message_id, content type, persistent', async () => {
    relay = await open.relay();
    const { id } = await relay.publisher.publish({ url: 'http://127.0.0.1:9/x', body: { a: [1] }, method: 'PATCH' });
    const message = await relay.channel.get(relay.names.workQueue, { noAck: true });
    expect(message && JSON.parse(message.content.toString())).toEqual({
      id,
      url: 'http://127.0.0.1:9/x',
      body: { a: [1] },
      method: 'PATCH',
    });
    expect(message && message.properties).toMatchObject({ messageId: id, contentType: 'application/json', deliveryMode: 2 });
  });

  it('honours a first-attempt delay', async () => {
    receiver = await open.receiver(() => ({ status: 200 }));
    relay = await open.relay();
    await relay.startWorker();
    // A first publish waits for the publisher's topology declaration (seconds on a loaded 4.x broker), and
    // a delay counts from the publish() call: declared first, the delay is not spent on the declaration.
    await relay.publisher.publish({ url: `${receiver.origin}/warm-up`, body: 0 });
    const publishedAt = Date.now();
    await relay.publisher.publish({ url: `${receiver.origin}/later`, body: 1 }, { delay: 2_000 });
    await relay.publisher.publish({ url: `${receiver.origin}/now`, body: 1 });
    const timed = (): ReceivedRequest[] => receiver!.requests.filter((r) => r.path !== '/warm-up');
    await receiver.waitFor(() => timed().length === 2, 10_000);
    expect(timed().map((r) => r.path)).toEqual(['/now', '/later']);
    expect(timed()[1]!.at - publishedAt).toBeGreaterThanOrEqual(1_900);
  });

  // The plugin drops a message that falls due with no queue bound: the topology step declares P.due, with
  // its 65 bindings, so a delay of 1 ms published before any worker ran is kept.
  const pluginSkip = pluginModeSkipReason();
  it.skipIf(pluginSkip !== undefined)(
    `plugin mode: a delayed callback that falls due before any worker ran is delivered once one starts${pluginSkip ? ` (skipped: ${pluginSkip})` : ''}`,
    async () => {
      receiver = await open.receiver(() => ({ status: 200 }));
      relay = await open.relay({ DELAY_MODE: 'plugin' });
      await relay.publisher.publish({ url: `${receiver.origin}/early`, body: 1 }, { delay: 1 });
      await sleep(1_500);
      await relay.startWorker();
      await receiver.waitFor((r) => r.length === 1, 10_000);
      expect(receiver.requests.map((r) => r.path)).toEqual(['/early']);
    },
  );

  const runnableModes: TestMode[] = [
    ...(testModes().includes('queues') ? ['queues' as const] : []),
    ...(pluginModeSkipReason() === undefined ? ['plugin' as const] : []),
  ];
  it.each(runnableModes)(
    'a publish into a prefix without topology rejects with CR_ERR_TOPOLOGY_MISSING naming the step, and goes through once it is declared [%s mode]',
    async (mode) => {
      // Publishers declare nothing (a producer's account has no configure right): the admin step or a worker does.
      const config = testConfig({ DELAY_MODE: mode });
      const publisher = createPublisher(config, createLogger('silent'));
      const connection = await amqplib.connect(config.amqpUrl);
      const channel = await connection.createChannel();
      try {
        const missing = await publisher
          .publish({ url: 'http://127.0.0.1:9/first', id: 'first-on-fresh', body: 0 })
          .catch((error: unknown) => error);
        expect(missing).toMatchObject({ code: 'CR_ERR_TOPOLOGY_MISSING' });
        expect((missing as Error).message).toContain('callback-relay topology');
        expect(publisher.connected()).toBe(false);
        // Nothing was declared by the attempt.
        const probe = await connection.createChannel();
        probe.on('error', () => {});
        await expect(probe.checkExchange(config.topologyPrefix)).rejects.toMatchObject({ code: 404 });
        await declareOnce(config, createLogger('silent'));
        // Checked again on its own: ready (the ingest's /readyz) without a publish to ask.
        for (const deadline = Date.now() + 10_000; !publisher.connected(); await sleep(100)) {
          if (Date.now() > deadline) throw new Error('connected() stayed false after the topology was declared');
        }
        const { id } = await publisher.publish({ url: 'http://127.0.0.1:9/first', id: 'first-on-fresh', body: 0 });
        expect(id).toBe('first-on-fresh');
        expect((await channel.checkQueue(`${config.topologyPrefix}.work`)).messageCount).toBe(1);
        expect(publisher.connected()).toBe(true);
      } finally {
        await publisher.close();
        await deleteTopology(channel, topologyNames(config.topologyPrefix, config.lanes, config.orderedShards));
        await connection.close();
      }
    },
  );

  it('rejects with CR_ERR_PUBLISH_TIMEOUT when the broker is unreachable, and bounds its buffer', async () => {
    const config = loadConfig({
      AMQP_URL: 'amqp://guest:guest@127.0.0.1:1',
      PUBLISH_TIMEOUT: '1s',
      PUBLISH_BUFFER_LIMIT: '2',
      LOG_LEVEL: 'silent',
    });
    const publisher = createPublisher(config, createLogger('silent'));
    try {
      const started = Date.now();
      const first = publisher.publish({ url: 'http://x/', body: 1 });
      const second = publisher.publish({ url: 'http://x/', body: 2 });
      await expect(publisher.publish({ url: 'http://x/', body: 3 })).rejects.toMatchObject({ code: 'CR_ERR_BUFFER_FULL' });
      await expect(first).rejects.toMatchObject({ code: 'CR_ERR_PUBLISH_TIMEOUT' });
      await expect(second).rejects.toMatchObject({ code: 'CR_ERR_PUBLISH_TIMEOUT' });
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      await publisher.close();
    }
    await expect(publisher.publish({ url: 'http://x/', body: 1 })).rejects.toMatchObject({ code: 'CR_ERR_CLOSED' });
  });

  it('republishes what a dropped connection left unconfirmed: every resolved publish is queued, none rejects', async () => {
    const proxy = await startTcpProxy(inject('amqpUrl'));
    try {
      relay = await open.relay();
      const cuts: number[] = [];
      const outcomes = await burst(relay, proxy, { PUBLISH_TIMEOUT: '120s' }, 10_000, (resolved) => {
        // Cut twice while thousands are still waiting for their confirm.
        if (resolved === 2_000 || resolved === 6_000) {
          cuts.push(10_000 - resolved);
          proxy.cut();
        }
      });
      expect(cuts.length).toBe(2);
      expect(Math.min(...cuts)).toBeGreaterThan(0);
      expect(rejectionCodes(outcomes)).toEqual(new Set());
      const queued = await queuedIds(relay.channel, relay.names.workQueue);
      expect(resolvedIds(outcomes).filter((id) => !queued.has(id))).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('reports publishes cut off from the broker until PUBLISH_TIMEOUT as outcome unknown, never as closed', async () => {
    const proxy = await startTcpProxy(inject('amqpUrl'));
    try {
      relay = await open.relay();
      // Cut at the first confirm: the broker confirms in batches, and a fast publisher can have every
      // message confirmed in the batch that reaches a later count.
      const outcomes = await burst(relay, proxy, { PUBLISH_TIMEOUT: '3s' }, 2_000, (resolved) => {
        if (resolved === 1) {
          proxy.refuse(true);
          proxy.cut();
        }
      });
      expect(rejectionCodes(outcomes)).toEqual(new Set(['CR_ERR_OUTCOME_UNKNOWN']));
      const queued = await queuedIds(relay.channel, relay.names.workQueue);
      expect(resolvedIds(outcomes).filter((id) => !queued.has(id))).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('CLI: publishes and prints the id; bad input exits 2 naming the flag and publishes nothing', async () => {
    relay = await open.relay();
    const env = { ...process.env, ...configEnv(relay.config) };
    const cli = ['--import', 'tsx', 'src/cli/main.ts', 'publish'];
    const ok = await run(
      process.execPath,
      [...cli, '--url', 'http://127.0.0.1:9/cli', '--data', '{"a":1}', '--header', 'X-Tenant: acme', '--id', 'cli-1'],
      { env },
    );
    expect(ok.stdout.trim()).toBe('published cli-1');
    const message = await relay.channel.get(relay.names.workQueue, { noAck: true });
    expect(message && JSON.parse(message.content.toString())).toEqual({
      id: 'cli-1',
      url: 'http://127.0.0.1:9/cli',
      body: { a: 1 },
      headers: { 'X-Tenant': 'acme' },
    });
    const bad = await run(process.execPath, [...cli, '--url', 'http://127.0.0.1:9/cli', '--data', '{oops'], { env }).catch(
      (error) => error,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/CR_ERR_INVALID_CALLBACK.*--data: is not valid JSON/);
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
  });
});
