import { randomUUID } from 'node:crypto';
import amqplib, { type Channel, type ConsumeMessage } from 'amqplib';
import { expect, inject, it, vi } from 'vitest';
import { startControlReader } from '../../src/control/control-reader.js';
import { controlStream } from '../../src/topology/declare-control.js';
import type { OutcomeEvent } from '../../src/events/outcome-events.js';
import { createLogger } from '../../src/logger.js';
import { createPublisher } from '../../src/producer/publisher.js';
import { applyDeclarations } from '../../src/topology/declare-list.js';
import { freePort } from '../support/free-port.js';
import { describeEachMode, sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { testConfig, type RelayFixture } from '../support/relay.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { cli } from '../support/cli.js';

const open = openedInEachTest();

/** Length of the longest strictly decreasing subsequence (by Dilworth: the fewest increasing runs the order splits into). */
function longestDecreasing(order: number[]): number {
  const longestEndingAt: number[] = [];
  order.forEach((n, i) => {
    longestEndingAt[i] = 1 + Math.max(0, ...order.slice(0, i).map((m, j) => (m > n ? (longestEndingAt[j] ?? 0) : 0)));
  });
  return Math.max(0, ...longestEndingAt);
}

/** A queue's depth, or 0 while it does not exist: the 404 closes only this throwaway connection's channel. */
async function depthOrZero(url: string, queue: string): Promise<number> {
  const connection = await amqplib.connect(url);
  try {
    const channel = await connection.createChannel();
    channel.on('error', () => {});
    return (await channel.checkQueue(queue)).messageCount;
  } catch {
    return 0;
  } finally {
    await connection.close().catch(() => {});
  }
}

/** Every outcome event published from now on, collected from a queue of the test's own bound to P.events. */
async function collectEvents(channel: Channel, relay: RelayFixture): Promise<OutcomeEvent[]> {
  const events: OutcomeEvent[] = [];
  const queue = `${relay.config.topologyPrefix}.test-events`;
  await channel.assertExchange(relay.names.eventsExchange, 'topic', { durable: true });
  await channel.assertQueue(queue, { exclusive: true });
  await channel.bindQueue(queue, relay.names.eventsExchange, '#');
  await channel.consume(
    queue,
    (message: ConsumeMessage | null) => message && events.push(JSON.parse(message.content.toString()) as OutcomeEvent),
    { noAck: true },
  );
  return events;
}

/**
 * The markers in the relay's P.control, read from its first one: at least `count`, then whatever else
 * arrives within a moment (so a test also sees a marker it did not expect).
 */
async function readControl(relay: RelayFixture, count: number): Promise<ConsumeMessage[]> {
  const markers: ConsumeMessage[] = [];
  await relay.channel.prefetch(1_000);
  const { consumerTag } = await relay.channel.consume(
    relay.names.controlQueue,
    (message) => message && (markers.push(message), relay.channel.ack(message)),
    { arguments: { 'x-stream-offset': 'first' } },
  );
  for (const deadline = Date.now() + 10_000; markers.length < count && Date.now() < deadline;) await sleep(50);
  await sleep(500);
  await relay.channel.cancel(consumerTag);
  return markers;
}

const markerOf = (message: ConsumeMessage): Record<string, string> => JSON.parse(message.content.toString()) as Record<string, string>;

const headerOf = (message: { properties: { headers?: Record<string, unknown> } }, name: string): string =>
  String(message.properties.headers?.[name]);

describeEachMode('cancel', (mode) => {
  it('a callback waiting in a long delay is parked as canceled when its delay ends, with no further attempt', async () => {
    const receiver = await open.receiver(() => ({ status: 503 }));
    const relay = await open.relay({ DELAY_MODE: mode, EVENTS: 'durable', RETRY_SCHEDULE: '4s' });
    const events = await collectEvents(relay.channel, relay);
    await relay.startWorker();
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/hook`, body: { n: 1 } });
    await receiver.waitFor((r) => r.length === 1, 10_000);
    await relay.publisher.cancel(id);

    await relay.waitForDead(1, 20_000);
    const [parked] = await relay.drainDead();
    expect(headerOf(parked!, 'x-callback-reason')).toBe('canceled');
    expect(headerOf(parked!, 'x-callback-attempts')).toBe('1');
    expect(headerOf(parked!, 'x-callback-last-status')).toBe('503');
    expect(receiver.requests).toHaveLength(1);
    await sleep(200);
    // The canceled event follows the dead-letter copy's confirm and the ack (the sleep gives an unexpected one time to show).
    await vi.waitFor(
      () =>
        expect(events.filter((e) => e.id === id).map((e) => [e.type, e.attempt, e.reason])).toEqual([
          ['retry-scheduled', 1, undefined],
          ['canceled', 1, 'canceled'],
        ]),
      { timeout: 10_000 },
    );
  });

  it('a cancel written while no worker runs holds across a restart; a replay from P.dead delivers the callback', async () => {
    const receiver = await open.receiver((r) => (r.nth === 1 ? { status: 503 } : { status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '4s' });
    const first = await relay.startWorker();
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/hook`, body: { n: 2 } });
    await receiver.waitFor((r) => r.length === 1, 10_000);
    await first.stop();

    const cancel = await cli(relay, ['cancel', id]);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toContain('cancel marker stored for 1 callback');
    await relay.startWorker();
    await relay.waitForDead(1, 20_000);
    expect(receiver.requests).toHaveLength(1);

    const listed = await cli(relay, ['dlq', 'list', '--json']);
    expect(JSON.parse(listed.stdout)).toMatchObject([{ id, reason: 'canceled' }]);
    const replay = await cli(relay, ['dlq', 'replay', '--reason', 'canceled']);
    expect(replay.code, replay.stderr).toBe(0);
    await receiver.waitFor((r) => r.length === 2, 10_000);
    expect(receiver.requests[1]!.headers['webhook-id']).toBe(id);
  });

  it('with two workers, callbacks cancelled before their first attempt are never attempted; the others are delivered', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode });
    await relay.startWorker();
    await relay.startWorker();
    // The ids are the caller's, so the cancel is stored before the callbacks exist: however long the
    // CLI takes to start on a busy machine, it cannot come after their first attempt.
    const ids = Array.from({ length: 6 }, (_, n) => `cb-cancel-${randomUUID()}-${n}`);
    const cancelled = ids.filter((_, n) => n % 2 === 0);
    const result = await cli(relay, ['cancel', ...cancelled]);
    expect(result.code, result.stderr).toBe(0);
    await Promise.all(
      ids.map((id, n) => relay.publisher.publish({ id, url: `${receiver.origin}/hook/${n}`, body: { n } }, { delay: 3_000 })),
    );

    await relay.waitForDead(3, 20_000);
    await receiver.waitFor((r) => r.length === 3, 10_000);
    const parked = await relay.drainDead();
    expect(parked.map((m) => String(m.properties.messageId)).sort()).toEqual([...cancelled].sort());
    expect(receiver.requests.map((r) => r.path).sort()).toEqual(['/hook/1', '/hook/3', '/hook/5']);
  });
});

it('P.control deleted under a running worker: the reader reads the new stream from its start, so a cancel written to it holds', async () => {
  const receiver = await open.receiver(() => ({ status: 204 }));
  const relay = await open.relay({ DELAY_MODE: 'queues' });
  await relay.startWorker();
  // Markers in the old stream, so the reader's offset is well past where the new stream starts.
  for (const id of ['old-1', 'old-2', 'old-3']) await relay.publisher.cancel(id);
  await relay.channel.deleteQueue(relay.names.controlQueue);
  // The reader declares the stream again once its consumer was cancelled; until then a cancel is returned.
  for (const deadline = Date.now() + 20_000; ;) {
    const stored = await relay.publisher.cancel('new-1').then(
      () => true,
      (error: { code?: string }) => (error.code === 'CR_ERR_PUBLISH_RETURNED' ? false : Promise.reject(error)),
    );
    if (stored) break;
    if (Date.now() > deadline) throw new Error('P.control was not declared again');
    await sleep(200);
  }
  const { id } = await relay.publisher.publish({ url: `${receiver.origin}/cancelled`, body: 1 }, { delay: 4_000 });
  await relay.publisher.cancel(id);
  await relay.waitForDead(1, 30_000);
  const [parked] = await relay.drainDead();
  expect([parked?.properties.messageId, headerOf(parked!, 'x-callback-reason')]).toEqual([id, 'canceled']);
  expect(receiver.requests).toHaveLength(0);
});

it('cancel refuses what is not a callback id, and a prefix without a control stream', async () => {
  const relay = await open.relay();
  const usage = await cli(relay, ['cancel', '--all']);
  expect(usage.code).toBe(2);
  const missing = await cli({ ...relay, config: { ...relay.config, topologyPrefix: `${relay.config.topologyPrefix}-none` } }, [
    'cancel',
    'cb-1',
  ]);
  expect(missing.code).toBe(2);
  expect(missing.stderr).toContain('CR_ERR_CONFIG');
  expect(missing.stderr).toContain('.control');
});

it('cancel markers from the library and the CLI are stored and confirmed, with the marker properties; close() waits for a cancel under way', async () => {
  const relay = await open.relay();
  await relay.publisher.cancel('cb-library');
  const cancel = await cli(relay, ['cancel', 'cb-cli']);
  expect(cancel.code, cancel.stderr).toBe(0);
  const underWay = relay.publisher.cancel('cb-closing');
  await relay.publisher.close();
  await underWay;

  const markers = await readControl(relay, 3);
  expect(markers.map((m) => markerOf(m).id)).toEqual(['cb-library', 'cb-cli', 'cb-closing']);
  for (const marker of markers) {
    expect(marker.properties).toMatchObject({
      deliveryMode: 2,
      contentType: 'application/json',
      messageId: `cancel:${markerOf(marker).id}:${markerOf(marker).at}`,
    });
  }
});

it('a cancel whose control stream no longer exists rejects with CR_ERR_PUBLISH_RETURNED', async () => {
  const relay = await open.relay();
  await relay.publisher.cancel('cb-1');
  await relay.channel.deleteQueue(relay.names.controlQueue);
  await expect(relay.publisher.cancel('cb-2')).rejects.toMatchObject({ code: 'CR_ERR_PUBLISH_RETURNED' });
});

it('a cancel sent as the connection is cut is published again after the reconnect; with the broker gone it rejects with a code', async () => {
  const relay = await open.relay();
  const proxy = await startTcpProxy(inject('amqpUrl'));
  const publisher = createPublisher(
    testConfig({ TOPOLOGY_PREFIX: relay.config.topologyPrefix, AMQP_URL: proxy.url, PUBLISH_TIMEOUT: '5s' }),
    createLogger('silent'),
  );
  try {
    await publisher.cancel('cb-before');
    proxy.cut();
    await publisher.cancel('cb-across-the-cut');
    expect(
      (await readControl(relay, 2)).map((m) => markerOf(m).id).filter((id) => id === 'cb-across-the-cut').length,
    ).toBeGreaterThanOrEqual(1);

    proxy.refuse(true);
    proxy.cut();
    const failed = await publisher.cancel('cb-no-broker').then(
      () => undefined,
      (error: { code?: string }) => error.code,
    );
    expect(['CR_ERR_PUBLISH_TIMEOUT', 'CR_ERR_OUTCOME_UNKNOWN']).toContain(failed);
  } finally {
    await publisher.close();
    await proxy.close();
  }
});

it('a reader writes a live pause again before the stream retention could drop it, keeping since and by; a resumed one is not', async () => {
  const relay = await open.relay();
  await applyDeclarations(relay.channel, controlStream(relay.names));
  const [paused, resumed] = ['https://renew.example', 'https://resumed.example'];
  for (const args of [
    ['pause', paused],
    ['pause', resumed],
    ['resume', resumed],
  ])
    expect((await cli(relay, ['target', ...args])).code).toBe(0);
  const reader = await startControlReader({
    urls: [relay.config.amqpUrl],
    names: relay.names,
    logger: createLogger('silent'),
    clock: Date.now,
    renewPauses: { ageMs: 500, checkMs: 100 },
  });
  try {
    const markers = (await readControl(relay, 5)).map(markerOf);
    const first = markers.find((m) => m.type === 'pause' && m.origin === paused);
    const renewals = markers.filter((m) => m.since !== undefined);
    expect(renewals.length).toBeGreaterThan(0);
    expect(renewals.every((m) => m.type === 'pause' && m.origin === paused && m.since === first?.at && m.by === 'operator')).toBe(true);
    expect(reader.pausedOrigins()).toEqual([{ origin: paused, since: first?.at, by: 'operator' }]);
  } finally {
    await reader.close();
  }
});

it('target list shows exactly the origins paused by markers written just before it, and adds nothing but its sync marker', async () => {
  const relay = await open.relay();
  await applyDeclarations(relay.channel, controlStream(relay.names));
  const [a, b, c] = ['https://a.example', 'https://b.example:8443', 'http://c.example'];
  for (const args of [
    ['pause', a],
    ['pause', b],
    ['pause', c],
    ['resume', a],
  ]) {
    const result = await cli(relay, ['target', ...args]);
    expect(result.code, result.stderr).toBe(0);
  }
  const listed = await cli(relay, ['target', 'list']);
  expect(listed.code, listed.stderr).toBe(0);
  const lines = listed.stdout.trim().split('\n');
  expect(lines.map((line) => line.split('  ')[0])).toEqual([b, c]);
  expect(
    lines.every((line) => / {2}paused since \S+ {2}by an operator$/.test(line)),
    listed.stdout,
  ).toBe(true);
  expect((await readControl(relay, 5)).map((m) => markerOf(m).type)).toEqual(['pause', 'pause', 'pause', 'resume', 'sync']);

  const json = await cli(relay, ['target', 'list', '--json']);
  expect(json.code, json.stderr).toBe(0);
  expect(JSON.parse(json.stdout)).toEqual([
    { origin: b, since: expect.any(String), by: 'operator' },
    { origin: c, since: expect.any(String), by: 'operator' },
  ]);
});

describeEachMode('pause a target', (mode) => {
  it('with two workers: no attempt while paused, every callback delivered after resume, each worker keeping its order; other targets unaffected', async () => {
    const paused = await open.receiver(() => ({ status: 200 }));
    const other = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, PREFETCH: '1', TARGET_CONCURRENCY: '1', TARGET_INITIAL_CONCURRENCY: '1' });
    await relay.startWorker();
    await relay.startWorker();
    const pause = await cli(relay, ['target', 'pause', paused.origin]);
    expect(pause.code, pause.stderr).toBe(0);
    // Workers read the marker live; a callback published right after it may still meet a worker that has not.
    await sleep(500);

    for (let n = 0; n < 8; n += 1) await relay.publisher.publish({ url: `${paused.origin}/hook/${n}`, body: { n } });
    await relay.publisher.publish({ url: `${other.origin}/hook`, body: {} });
    await other.waitFor((r) => r.length === 1, 10_000);
    await sleep(3_000);
    expect(paused.requests).toHaveLength(0);
    const listed = await cli(relay, ['target', 'list']);
    expect(listed.stdout).toContain(`${paused.origin}  paused since `);

    const resume = await cli(relay, ['target', 'resume', paused.origin]);
    expect(resume.code, resume.stderr).toBe(0);
    await paused.waitFor((r) => r.length === 8, 40_000);
    const order = paused.requests.map((r) => Number(r.path.split('/').pop()));
    expect([...order].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    // Each worker keeps its own order, once when holding (into P.paused) and once when delivering, and
    // the single mover keeps P.paused's: the order is a merge of at most 2 × 2 increasing runs, so no
    // five callbacks arrive in decreasing order. How far one moves depends on how long a worker stalls.
    expect(longestDecreasing(order), `order ${order.join(',')}`).toBeLessThanOrEqual(4);
    expect(paused.requests.every((r) => r.headers['webhook-id'] !== undefined)).toBe(true);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    expect((await cli(relay, ['target', 'list'])).stdout).toContain('no target is paused');
  });

  it('a held callback: one paused event when first held, none per recirculation, shown by history', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, EVENTS: 'durable', HISTORY: 'on' });
    const events = await collectEvents(relay.channel, relay);
    await relay.startWorker();
    expect((await cli(relay, ['target', 'pause', receiver.origin])).code).toBe(0);
    await sleep(500);

    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/hook`, body: { n: 1 } });
    // Past the 10 s hold TTL: the callback went through P.paused.check and back at least once.
    await sleep(12_000);
    expect(receiver.requests).toHaveLength(0);
    expect((await cli(relay, ['target', 'resume', receiver.origin])).code).toBe(0);
    await receiver.waitFor((r) => r.length === 1, 40_000);
    await sleep(300);
    // The delivered event is published after the HTTP response (the sleep gives an unexpected one time to show).
    await vi.waitFor(
      () =>
        expect(events.filter((e) => e.id === id).map((e) => [e.type, e.attempt])).toEqual([
          ['paused', 0],
          ['delivered', 1],
        ]),
      { timeout: 10_000 },
    );

    const timeline = await cli(relay, ['history', id]);
    expect(timeline.code, timeline.stderr).toBe(0);
    const lines = timeline.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/attempt 0 {2}paused {2}- {2}- {2}\S+\/\d+$/);
    expect(lines[1]).toMatch(/attempt 1 {2}delivered {2}HTTP 200/);
  });

  it('P.paused deleted under a running worker: the hold declares the topology again and holds the callback, delivered after resume', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode });
    await relay.startWorker();
    expect((await cli(relay, ['target', 'pause', receiver.origin])).code).toBe(0);
    await sleep(500);
    await relay.channel.deleteQueue(relay.names.pausedQueue);

    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/hook`, body: { n: 1 } });
    // The hold finds P.paused gone and declares it again: on a loaded broker that can take seconds.
    for (let waited = 0; (await depthOrZero(relay.config.amqpUrl, relay.names.pausedQueue)) < 1; waited += 250) {
      expect(waited, 'the callback was not held in a declared-again P.paused').toBeLessThan(30_000);
      await sleep(250);
    }
    expect(receiver.requests).toHaveLength(0);
    expect(await relay.messageCount(relay.names.pausedQueue)).toBe(1);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);

    expect((await cli(relay, ['target', 'resume', receiver.origin])).code).toBe(0);
    await receiver.waitFor((r) => r.length === 1, 40_000);
    expect(receiver.requests[0]!.headers['webhook-id']).toBe(id);
    expect(receiver.requests[0]!.headers['x-callback-attempt'] ?? '1').toBe('1');
  });
});

it('AUTO_PAUSE_AFTER pauses a target whose every attempt failed for that long: its callback waits unattempted until resumed', async () => {
  let down = true;
  let delivered = 0;
  const receiver = await open.receiver(() => {
    if (down) return { status: 503 };
    delivered += 1;
    return { status: 200 };
  });
  const relay = await open.relay({
    DELAY_MODE: 'queues',
    AUTO_PAUSE_AFTER: '2s',
    RETRY_SCHEDULE: '1s',
    MAX_ATTEMPTS: '20',
    RETRY_JITTER: '0',
  });
  await relay.startWorker();
  await relay.publisher.publish({ url: `${receiver.origin}/hook`, body: {} });
  const listed = async (): Promise<string> => (await cli(relay, ['target', 'list'])).stdout;
  // Attempts 1, 2, 3 fail over about 2 s; the attempt that ends the streak's 2 s writes the pause marker.
  for (let waited = 0; !(await listed()).includes(`${receiver.origin}  paused since `); waited += 500) {
    expect(waited, 'the target was not paused').toBeLessThan(20_000);
    await sleep(500);
  }
  expect((await listed()).split('\n').find((line) => line.startsWith(`${receiver.origin}  `))).toMatch(/ {2}by AUTO_PAUSE_AFTER$/);
  const attemptsWhenPaused = receiver.requests.length;
  expect(attemptsWhenPaused).toBeGreaterThanOrEqual(3);
  await sleep(4_000);
  // Held, not attempted: no attempt spent while paused (one may have been under way as the marker landed).
  expect(receiver.requests.length).toBeLessThanOrEqual(attemptsWhenPaused + 1);
  down = false;
  expect((await cli(relay, ['target', 'resume', receiver.origin])).code).toBe(0);
  await receiver.waitFor(() => delivered === 1, 30_000);
  expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
});

it('a circuit one worker opens is opened on the other through P.control, without paying detection again', async () => {
  const slow = await open.receiver(() => ({ status: 200, delayMs: 600 }));
  const relay = await open.relay({
    SLOW_THRESHOLD: '200ms',
    HTTP_TIMEOUT: '2s',
    QUIET_PERIOD: '30s',
    RETRY_SCHEDULE: '1s',
    MAX_ATTEMPTS: '5',
  });
  // The first detects after 3 slow results of 6; the second alone would need 20 of 20.
  await relay.startWorker({}, { healthWindow: 6, degradeThreshold: 3 });
  const second = await relay.startWorker({}, { healthWindow: 20, degradeThreshold: 20, metricsPort: await freePort() });
  for (let n = 0; n < 8; n += 1) await relay.publisher.publish({ url: `${slow.origin}/hook/${n}`, body: { n } });
  const metrics = async (): Promise<string> => (await fetch(`http://127.0.0.1:${second.metricsPort}/metrics`)).text();
  const deadline = Date.now() + 20_000;
  while (!/callback_relay_degraded_targets 1/.test(await metrics())) {
    if (Date.now() > deadline) throw new Error(`the second worker never opened the circuit:\n${await metrics()}`);
    await sleep(200);
  }
  expect(await metrics()).toMatch(/callback_relay_target_transitions_total\{to="degraded"\} 1/);
});
