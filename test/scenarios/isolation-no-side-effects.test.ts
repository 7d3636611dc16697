import { expect, it } from 'vitest';
import { laneBucket, laneOf } from '../../src/topology/topology-names.js';
import { freePort } from '../support/free-port.js';
import { describeEachMode } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import type { Answer, ReceivedRequest, Receiver } from '../support/receiver.js';
import type { RelayFixture } from '../support/relay.js';

// Isolation changes who waits, never whether a callback is delivered (docs/isolation.md): outages that
// recover and receivers that are slow but work end delivered, as with ISOLATION=off; a quiet target is
// not held up by a busy one queued ahead of it in its lane, whether the producer routed by bucket or not.

// Relays, receivers and worker processes close after each test, newest first: workers before their relay.
const open = openedInEachTest();

const LANES = 8;
const ids = (requests: ReceivedRequest[]): Set<string> => new Set(requests.map((r) => String(r.headers['webhook-id'])));
const lane = (receiver: Receiver): number => laneOf(laneBucket(receiver.origin), LANES);

const publishMany = (relay: RelayFixture, target: Receiver, count: number, tag: string) =>
  Promise.all(Array.from({ length: count }, (_, i) => relay.publisher.publish({ url: `${target.origin}/${tag}/${i}`, body: i })));

/** Publishes with plain `deliver`, as a producer that computes no bucket does (wire contract). */
function publishPlain(relay: RelayFixture, target: Receiver, count: number, tag: string): void {
  for (let i = 0; i < count; i += 1) {
    const body = Buffer.from(JSON.stringify({ url: `${target.origin}/${tag}/${i}`, body: { i } }));
    relay.channel.publish(relay.names.exchange, 'deliver', body, {
      persistent: true,
      messageId: `${tag}-${i}`,
      contentType: 'application/json',
    });
  }
}

/** A receiver in the same lane as `other` (ports are random, so listen until one fits; the others idle until the test ends). */
async function receiverInLaneOf(other: Receiver, script: (request: ReceivedRequest) => Answer): Promise<Receiver> {
  for (;;) {
    const receiver = await open.receiver(script);
    if (lane(receiver) === lane(other)) return receiver;
  }
}

/**
 * A worker as its own process, as a container runs it: its event loop then holds its own work only, not
 * this test's publishes and receivers, whose load it would take for its own and stop moving (saturated).
 */
async function ownProcess(fixture: RelayFixture): Promise<void> {
  await open.worker(fixture.config).consuming;
}

const OUTAGE = {
  LANES: String(LANES),
  PREFETCH: '20',
  HTTP_TIMEOUT: '1s',
  SLOW_THRESHOLD: '300ms',
  DEGRADE_THRESHOLD: '3',
  RETRY_SCHEDULE: '1s,1s,1s',
  MAX_ATTEMPTS: '4',
};

describeEachMode('isolation without side effects', (mode) => {
  // Every attempt timing out, OUTAGE's schedule lasts 4 × 1 s + 3 × 1 s = 7 s: ISOLATION=off delivers a
  // callback of a receiver back after 5 s at its fourth attempt, about 6 s in. The circuit may
  // dead-letter a callback only once its schedule has ended with its target failing throughout
  // (isolation.md#schedule-keeps-its-time).
  it.each([
    ['3 s', 3_000],
    ["5 s, shortly before its callbacks' schedule ends", 5_000],
  ])(
    'a receiver that hangs for %s, then answers: every callback is delivered, none dead-lettered (as with ISOLATION=off)',
    async (_, hangMs) => {
      let hangUntil = 0;
      const target = await open.receiver(() => (Date.now() < hangUntil ? 'hang' : { status: 200 }));
      const relay = await open.relay({ DELAY_MODE: mode, ...OUTAGE });
      await relay.startWorker();
      hangUntil = Date.now() + hangMs;
      const published = await publishMany(relay, target, 60, 'o');
      await target.waitFor((r) => ids(r.filter((q) => q.at >= hangUntil)).size === published.length, 30_000);
      expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    },
  );

  it('a receiver that hung is found back while its hung requests still run: a probe past SLOW_THRESHOLD makes room for the next', async () => {
    let hangUntil = 0;
    const target = await open.receiver(() => (Date.now() < hangUntil ? 'hang' : { status: 200 }));
    // HTTP_TIMEOUT 30 s: the requests made while it hung are still running when the check ends.
    const relay = await open.relay({ DELAY_MODE: mode, ...OUTAGE, HTTP_TIMEOUT: '30s' });
    await relay.startWorker();
    hangUntil = Date.now() + 2_000;
    const published = await publishMany(relay, target, 40, 'h');
    const hung = (): Set<string> => ids(target.requests.filter((q) => q.at < hangUntil));
    // Every callback but those whose request still hangs is delivered long before those time out.
    await target.waitFor((r) => ids(r.filter((q) => q.at >= hangUntil)).size + hung().size >= published.length, 15_000);
    expect(hung().size, 'few requests went to the receiver while it hung').toBeLessThan(published.length / 2);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    // Closed, the receiver ends the hung requests: the worker's stop need not wait for their timeout.
    await target.close();
  });

  it('a receiver that is slow but works (answers 200 after 1.2 s, SLOW_THRESHOLD 300 ms) has every callback delivered, at its first attempt', async () => {
    const target = await open.receiver(() => ({ status: 200, delayMs: 1_200 }));
    const relay = await open.relay({ DELAY_MODE: mode, ...OUTAGE, HTTP_TIMEOUT: '3s', RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '2' });
    await relay.startWorker();
    const published = await publishMany(relay, target, 60, 's');
    await target.waitFor((r) => ids(r).size === published.length, 30_000);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    expect(
      target.requests.every((r) => r.headers['x-callback-attempt'] === '1'),
      'no attempt was spent on a working receiver',
    ).toBe(true);
  });

  it("a quiet target queued behind a busy one in the same lane is served at once; the busy one's excess moves to P.slow and is all delivered", async () => {
    const busy = await open.receiver(() => ({ status: 200, delayMs: 150 }));
    const quiet = await receiverInLaneOf(busy, () => ({ status: 200 }));
    // HTTP_TIMEOUT 20 s: on a loaded machine a 150 ms answer never times out and is sent again (each is sent once).
    const relay = await open.relay({ DELAY_MODE: mode, LANES: String(LANES), PREFETCH: '20', HTTP_TIMEOUT: '20s' });
    await ownProcess(relay);
    const backlog = await publishMany(relay, busy, 600, 'b');
    const quietIds = await publishMany(relay, quiet, 10, 'q');
    await quiet.waitFor((r) => ids(r).size === quietIds.length, 20_000);
    // 600 at 150 ms over 20 slots take 4.5 s; the quiet ones did not wait for that.
    expect(ids(busy.requests).size, 'the quiet target waited for the backlog ahead of it').toBeLessThan(backlog.length / 2);
    await busy.waitFor((r) => ids(r).size === backlog.length, 60_000);
    expect(busy.requests.length, 'each busy callback was sent once').toBe(backlog.length);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });

  // A lane's window is 2 × PREFETCH, and in queues mode 400 more (room for callbacks held until due):
  // 150 callbacks fit below its line (half of it) in queues mode and stay in the worker; in plugin mode
  // they do not, and the same busy target's excess moves (the control: it is busy, and worth moving).
  it("a busy target whose backlog fits below its lane's line is not moved (queues mode); one that does not fit is (plugin mode)", async () => {
    const busy = await open.receiver(() => ({ status: 200, delayMs: 200 }));
    // HTTP_TIMEOUT 20 s: on a loaded machine a 200 ms answer never times out and is sent again (each is sent once).
    const relay = await open.relay({
      DELAY_MODE: mode,
      LANES: String(LANES),
      PREFETCH: '20',
      METRICS_PORT: String(await freePort()),
      HTTP_TIMEOUT: '20s',
    });
    const worker = await relay.startWorker();
    const backlog = await publishMany(relay, busy, 150, 'w');
    await busy.waitFor((r) => ids(r).size === backlog.length, 30_000);
    const metrics = await (await fetch(`http://127.0.0.1:${worker.metricsPort}/metrics`)).text();
    const moved = Number(/callback_relay_moves_total\{kind="overflow"\} (\d+)/.exec(metrics)?.[1] ?? 0);
    if (mode === 'queues') expect(moved, 'callbacks moved to P.slow for nothing').toBe(0);
    else expect(moved, 'the excess over the line moved').toBeGreaterThan(0);
    expect(busy.requests.length, 'each callback was sent once').toBe(backlog.length);
  });

  it('a producer that publishes with plain `deliver` gets the same fairness', async () => {
    const busy = await open.receiver(() => ({ status: 200, delayMs: 150 }));
    const quiet = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, LANES: String(LANES), PREFETCH: '20' });
    await ownProcess(relay);
    publishPlain(relay, busy, 600, 'pb');
    publishPlain(relay, quiet, 10, 'pq');
    await quiet.waitFor((r) => ids(r).size === 10, 20_000);
    expect(ids(busy.requests).size, 'the quiet target waited for the backlog ahead of it').toBeLessThan(300);
    await busy.waitFor((r) => ids(r).size === 600, 60_000);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });
});
