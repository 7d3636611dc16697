import type { GetMessage } from 'amqplib';
import { afterEach, expect, it } from 'vitest';
import { laneBucket, laneOf } from '../../src/topology/topology-names.js';
import { freePort } from '../support/free-port.js';
import { describeEachMode, sleep } from '../support/modes.js';
import { startReceiver, type Answer, type ReceivedRequest, type Receiver } from '../support/receiver.js';
import { startRelay, type RelayFixture } from '../support/relay.js';

let relay: RelayFixture | undefined;
let receivers: Receiver[] = [];
afterEach(async () => {
  await relay?.cleanup();
  await Promise.all(receivers.map((r) => r.close()));
  relay = undefined;
  receivers = [];
});

const LANES = 8;
const ids = (requests: { headers: Record<string, unknown> }[]): Set<string> =>
  new Set(requests.map((r) => String(r.headers['webhook-id'])));
const lane = (receiver: Receiver): number => laneOf(laneBucket(receiver.origin), LANES);
/** Hanging attempts end after 1 s and open a circuit after 4 slow results; 3 attempts, 1 s apart. */
const SHORT_HANGS = {
  PREFETCH: '20',
  HTTP_TIMEOUT: '1s',
  SLOW_THRESHOLD: '300ms',
  HEALTH_WINDOW: '10',
  DEGRADE_THRESHOLD: '4',
  RETRY_SCHEDULE: '1s,1s',
  MAX_ATTEMPTS: '3',
};

/** A receiver whose origin hashes to a lane none of `others` uses (ports are random, so retry). */
async function receiverInOwnLane(script: (request: ReceivedRequest) => Answer, others: Receiver[]): Promise<Receiver> {
  for (;;) {
    const receiver = await startReceiver(script);
    if (!others.some((other) => lane(other) === lane(receiver))) return receiver;
    await receiver.close();
  }
}

/** Publishes in rounds of 500, within the publisher's PUBLISH_BUFFER_LIMIT (1,000 by default). */
async function publishMany(target: Receiver, count: number, tag: string) {
  const published = [];
  for (let start = 0; start < count; start += 500) {
    const round = Array.from({ length: Math.min(500, count - start) }, (_, k) =>
      relay!.publisher.publish({ url: `${target.origin}/${tag}/${start + k}`, body: start + k }),
    );
    published.push(...(await Promise.all(round)));
  }
  return published;
}

/**
 * A never-answering target's callbacks, all in P.dead as `exhausted`: each either after its 3 attempts
 * as real requests, or with fewer, its circuit open to the end of its schedule (`circuit open` as its
 * last error), and never without a request to it since its schedule began (the probes and owed requests).
 */
function expectExpired(dead: GetMessage[], hanging: Receiver, count: number): void {
  expect(dead).toHaveLength(count);
  for (const message of dead) {
    const headers = message.properties.headers ?? {};
    expect(headers['x-callback-reason']).toBe('exhausted');
    const attempts = Number(headers['x-callback-attempts']);
    expect(attempts).toBeLessThanOrEqual(3);
    if (attempts < 3) expect(String(headers['x-callback-last-error'])).toMatch(/^CIRCUIT_OPEN: /);
  }
  expect(
    dead.some((m) => Number(m.properties.headers?.['x-callback-attempts']) < 3),
    'some ended with their circuit open',
  ).toBe(true);
  expect(hanging.requests.length).toBeGreaterThan(0);
}

describeEachMode('target isolation', (mode) => {
  it('a cold target is served at once next to a busy one with a deep backlog, and the busy one still uses every slot alone', async () => {
    const busy = await startReceiver(() => ({ status: 200, delayMs: 100 }));
    const cold = await receiverInOwnLane(() => ({ status: 200 }), [busy]);
    receivers = [busy, cold];
    relay = await startRelay({ DELAY_MODE: mode, LANES: String(LANES), PREFETCH: '20' });
    await relay.startWorker();
    // Deep enough that the busy target is far from done when the cold one is, on a loaded machine too.
    const backlog = await publishMany(busy, 1_500, 'b');
    // Alone, the busy target earns every slot: in flight at once it reaches PREFETCH.
    await busy.waitFor((r) => r.length >= 100, 20_000);
    const coldIds = await publishMany(cold, 30, 'c');
    await cold.waitFor((r) => ids(r).size === coldIds.length, 20_000);
    const busyDoneWhenColdDone = ids(busy.requests).size;
    expect(busyDoneWhenColdDone, 'the cold target did not wait for the backlog').toBeLessThan(backlog.length * 0.75);
    await busy.waitFor((r) => ids(r).size === backlog.length, 90_000);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });

  it('a hanging target next to a flaky one: the flaky one keeps real attempts on its schedule, the hanging one reaches the DLQ when its schedule ends', async () => {
    const hanging = await startReceiver(() => 'hang');
    const flaky = await receiverInOwnLane((request) => (request.nth === 1 ? { status: 500 } : { status: 200 }), [hanging]);
    const healthy = await receiverInOwnLane(() => ({ status: 200 }), [hanging, flaky]);
    receivers = [hanging, flaky, healthy];
    relay = await startRelay({ DELAY_MODE: mode, LANES: String(LANES), ...SHORT_HANGS });
    await relay.startWorker();
    const hung = await publishMany(hanging, 40, 'h');
    await sleep(500);
    const flakyIds = await publishMany(flaky, 40, 'f');
    const healthyIds = await publishMany(healthy, 40, 'g');
    await healthy.waitFor((r) => ids(r).size === healthyIds.length, 10_000);
    await flaky.waitFor((r) => ids(r.filter((q) => q.nth === 2)).size === flakyIds.length, 20_000);
    // Every flaky callback failed once, fast, and was delivered by its second attempt: a fast
    // failure is no reason to stop trying a target.
    for (const request of flaky.requests) expect(Number(request.headers['x-callback-attempt'])).toBeLessThanOrEqual(2);
    await relay.waitForDead(hung.length, 90_000);
    expectExpired(await relay.drainDead(), hanging, hung.length);
  });

  it('a hanging target alone: its backlog reaches the DLQ when its schedule ends, with far fewer requests than attempts', async () => {
    const hanging = await startReceiver(() => 'hang');
    receivers = [hanging];
    relay = await startRelay({ DELAY_MODE: mode, LANES: String(LANES), ...SHORT_HANGS });
    await relay.startWorker();
    const hung = await publishMany(hanging, 60, 'alone');
    await relay.waitForDead(hung.length, 90_000);
    expectExpired(await relay.drainDead(), hanging, hung.length);
    // ISOLATION=off makes all 180 attempts as requests, 20 at a time; the circuit's probes and a few
    // owed requests tell it the receiver still hangs.
    expect(hanging.requests.length).toBeLessThan(hung.length * 3 * 0.75);
  });

  it('a receiver whose first attempts hang and whose retries answer at once: every callback delivered, as without isolation', async () => {
    // A retry that finds its work done answers at once: the circuit opens on the hanging first
    // attempts, and must not spend the retries that would succeed (chaos' hang-then-ok fate).
    const target = await startReceiver((request) => (request.nth === 1 ? 'hang' : { status: 200 }));
    receivers = [target];
    relay = await startRelay({ DELAY_MODE: mode, LANES: String(LANES), ...SHORT_HANGS });
    await relay.startWorker();
    const published = await publishMany(target, 60, 'r');
    await target.waitFor((r) => ids(r.filter((q) => q.nth >= 2)).size === published.length, 60_000);
    await sleep(1_000);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });

  it('a steady stream whose first attempts hang and whose retries answer: every callback delivered, though the probes are first attempts that hang', async () => {
    // New callbacks keep coming, so the circuit's oldest waiting callbacks (its probes) are mostly first
    // attempts, which hang: the target fails every request the circuit lets through while the held
    // retries' schedules run out. Their second attempt would succeed, so none may be dead-lettered.
    const target = await startReceiver((request) => (request.nth === 1 ? 'hang' : { status: 200 }));
    receivers = [target];
    relay = await startRelay({ DELAY_MODE: mode, LANES: String(LANES), ...SHORT_HANGS });
    await relay.startWorker();
    const published: { id: string }[] = [];
    for (let round = 0; round < 40; round += 1) {
      const batch = Array.from({ length: 6 }, (_, k) => relay!.publisher.publish({ url: `${target.origin}/s/${round}/${k}`, body: k }));
      published.push(...(await Promise.all(batch)));
      await sleep(250);
    }
    await target.waitFor((r) => ids(r.filter((q) => q.nth >= 2)).size === published.length, 90_000);
    await sleep(1_000);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });

  it('a circuit opens, defers attempts, probes, and closes once the target answers again, with nothing dead-lettered', async () => {
    let hang = true;
    const target = await startReceiver(() => (hang ? 'hang' : { status: 200 }));
    receivers = [target];
    relay = await startRelay({
      DELAY_MODE: mode,
      LANES: String(LANES),
      PREFETCH: '10',
      HTTP_TIMEOUT: '1s',
      SLOW_THRESHOLD: '200ms',
      HEALTH_WINDOW: '6',
      DEGRADE_THRESHOLD: '3',
      QUIET_PERIOD: '1s',
      RETRY_SCHEDULE: '1s',
      MAX_ATTEMPTS: '30',
      METRICS_PORT: String(await freePort()),
    });
    const worker = await relay.startWorker();
    const first = await publishMany(target, 20, 'a');
    await target.waitFor((r) => r.length >= 3, 10_000);
    // Opened: retries keep coming due every second, but only probes reach the target; the others are deferred.
    await sleep(3_000);
    const requestsWhileOpen = target.requests.length;
    expect(requestsWhileOpen, 'attempts were deferred instead of hanging').toBeLessThan(first.length);
    const metrics = await (await fetch(`http://127.0.0.1:${worker.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/callback_relay_moves_total\{kind="deferred"\} [1-9]/);
    expect(metrics).toMatch(/callback_relay_degraded_targets 1/);
    const recoveredAt = Date.now();
    hang = false;
    await target.waitFor((r) => ids(r.filter((q) => q.at >= recoveredAt)).size === first.length, 60_000);
    const after = await (await fetch(`http://127.0.0.1:${worker.metricsPort}/metrics`)).text();
    expect(after).toMatch(/callback_relay_target_transitions_total\{to="healthy"\} 1/);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });
});

describeEachMode('work lanes', (mode) => {
  it('routes each callback to the lane of its origin, its retries come back, and plain `deliver` still works', async () => {
    const receiver = await startReceiver((request) => (request.nth === 1 ? { status: 503 } : { status: 200 }));
    receivers = [receiver];
    // The publisher declares the topology first (about 1,500 bindings in queues mode): slow on a busy machine.
    relay = await startRelay({ DELAY_MODE: mode, LANES: String(LANES), RETRY_SCHEDULE: '1s', PUBLISH_TIMEOUT: '30s' });
    const [published] = await publishMany(receiver, 1, 'x');
    const laneQueue = relay.names.workQueues[lane(receiver)]!;
    expect(await relay.messageCount(laneQueue)).toBe(1);
    // A producer that knows nothing of lanes.
    relay.channel.publish(relay.names.exchange, 'deliver', Buffer.from(JSON.stringify({ url: `${receiver.origin}/plain`, body: {} })), {
      persistent: true,
      messageId: 'plain-1',
    });
    await relay.startWorker();
    await receiver.waitFor((r) => r.filter((q) => q.nth === 2).length === 2, 20_000);
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual(expect.arrayContaining([published!.id, 'plain-1']));
  });
});

it('ISOLATION=off delivers everything in arrival order', async () => {
  const receiver = await startReceiver(() => ({ status: 200 }));
  receivers = [receiver];
  relay = await startRelay({ ISOLATION: 'off', PREFETCH: '10' });
  await relay.startWorker();
  await publishMany(receiver, 50, 'o');
  await receiver.waitFor((r) => r.length === 50);
  expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
});
