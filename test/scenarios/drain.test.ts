import { describe, expect, inject, it, vi } from 'vitest';
import { laneBucket, laneOf } from '../../src/topology/topology-names.js';
import { sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import type { ReceivedRequest, Receiver } from '../support/receiver.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const open = openedInEachTest();

const LANES = 8;
const PREFETCH = 4;
const CALLBACKS = 120;
/** How long the receivers hold the stopped worker's attempts: its slots stay full until after the SIGTERM. */
const HOLD_MS = 3_000;

/**
 * Receivers on port 0, each its own target (origin), until every one of the LANES lanes has at least
 * two, so each lane's consumer holds messages that wait for one of PREFETCH slots.
 */
async function receiversOnEveryLane(answer: () => number): Promise<Receiver[]> {
  const receivers: Receiver[] = [];
  const perLane = new Map<number, number>();
  while ([...perLane.values()].filter((n) => n >= 2).length < LANES) {
    if (receivers.length >= 200) throw new Error('200 receivers did not cover every lane');
    const receiver = await open.receiver(() => ({ status: 200, delayMs: answer() }));
    receivers.push(receiver);
    const lane = laneOf(laneBucket(receiver.origin), LANES);
    perLane.set(lane, (perLane.get(lane) ?? 0) + 1);
  }
  return receivers;
}

const allRequests = (receivers: Receiver[]): ReceivedRequest[] => receivers.flatMap((r) => r.requests);

/** Requests per callback id over every receiver. */
function requestsPerId(receivers: Receiver[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const request of allRequests(receivers)) {
    const id = String(request.headers['webhook-id']);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

describe.each(['on', 'off'])('drain with ISOLATION=%s', (isolation) => {
  it(`SIGTERM with ${LANES} lanes and more waiting than its ${PREFETCH} slots: the waiting callbacks go back unattempted, another worker delivers each once`, async () => {
    let holdMs = HOLD_MS;
    const receivers = await receiversOnEveryLane(() => holdMs);
    const relay = await open.relay({
      LANES: String(LANES),
      PREFETCH: String(PREFETCH),
      ISOLATION: isolation,
      HTTP_TIMEOUT: '20s',
      // The held attempts are slow successes, never a reason to open a circuit or move anything.
      SLOW_THRESHOLD: '20s',
      DRAIN_TIMEOUT: '30s',
      // The first publish declares the topology (8 lanes): seconds on a loaded machine.
      PUBLISH_TIMEOUT: '60s',
    });
    const ids = await Promise.all(
      Array.from({ length: CALLBACKS }, (_, i) =>
        relay.publisher.publish({ url: `${receivers[i % receivers.length]!.origin}/drain/${i}`, body: i }).then((r) => r.id),
      ),
    );
    const worker = open.worker(relay.config);
    await worker.consuming;
    // Every slot holds an attempt the receivers answer only after HOLD_MS; each lane's consumer has
    // delivered its prefetch meanwhile (a few ms), and those messages wait for a slot.
    await receivers[0]!.waitFor(() => allRequests(receivers).length >= PREFETCH);
    await sleep(300);
    expect(allRequests(receivers)).toHaveLength(PREFETCH);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    const output = worker.output();
    expect(output).toContain('worker stopped');
    expect(output).not.toContain('drain timeout');
    const returned = Number(/"returned":(\d+)/.exec(output)?.[1]);
    expect(returned).toBeGreaterThan(PREFETCH);

    // The stopped worker attempted only what was in flight at the SIGTERM, and acked those.
    const attemptedByStopped = allRequests(receivers).length;
    expect(attemptedByStopped).toBe(PREFETCH);
    // What the stopped worker returned reaches a quorum queue's ready count after a Raft commit.
    await vi.waitFor(
      async () => {
        let queued = 0;
        for (const queue of [...relay.names.workQueues, relay.names.slowQueue]) queued += await relay.messageCount(queue);
        expect(queued).toBe(CALLBACKS - PREFETCH);
      },
      { timeout: 10_000 },
    );

    holdMs = 0;
    await relay.startWorker({}, { prefetch: 20 });
    await receivers[0]!.waitFor(() => requestsPerId(receivers).size === CALLBACKS, 60_000);
    await sleep(1_000);
    const counts = requestsPerId(receivers);
    expect(new Set(counts.keys())).toEqual(new Set(ids));
    expect([...counts.entries()].filter(([, n]) => n > 1)).toEqual([]);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });
});

it('a broker that stops answering does not hold the stop: stop() returns by DRAIN_TIMEOUT, and the attempt it cut short is delivered again once the broker answers', async () => {
  const DRAIN_MS = 4_000;
  const proxy = await startTcpProxy(inject('amqpUrl'));
  try {
    let holdMs = 30_000;
    const receiver = await open.receiver(() => ({ status: 200, delayMs: holdMs }));
    const relay = await open.relay({ DRAIN_TIMEOUT: `${DRAIN_MS}ms`, HTTP_TIMEOUT: '60s', SLOW_THRESHOLD: '60s' });
    // Only the worker goes through the proxy; the fixture's own connections reach the broker directly.
    const worker = await relay.startWorker({}, { amqpUrl: proxy.url });
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/held`, body: 1 });
    await receiver.waitFor((requests) => requests.length === 1, 20_000);
    proxy.stall(true);
    const started = Date.now();
    await worker.stop();
    const tookMs = Date.now() - started;
    // A bound, not a speed: before, the cancel waited for an answer that never came, until the SIGKILL.
    expect(tookMs).toBeLessThan(DRAIN_MS + 1_000);
    // The broker answers again and the worker's connection goes: the unsettled callback is back, and another worker delivers it.
    proxy.stall(false);
    proxy.cut();
    holdMs = 0;
    await relay.startWorker();
    await receiver.waitFor((requests) => requests.filter((r) => r.headers['webhook-id'] === id).length === 2, 30_000);
  } finally {
    await proxy.close();
  }
});
