import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createPublisher } from '../../src/producer/publisher.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';

const open = openedInEachTest();

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/**
 * How late a callback may arrive after its due time: the median within 250 ms (the accuracy goal), each
 * one within a second (before, callbacks were up to half a second early and about a second late). The
 * bounds are loose on purpose: the machine's CPU is shared, and speed is the benchmark's to measure
 * (`npm run bench -- --scenario pending`).
 */
const LATE_MEDIAN_MS = 250;
const LATE_MS = 1_000;
/** How early: never, but for the rounding of a timer to whole ms. */
const EARLY_MS = 5;

describe('queues mode: on time to well under a second', () => {
  it('a callback due at a sub-second time arrives within 250 ms of it, never early', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: 'queues' });
    await relay.startWorker();
    // The first publish connects and declares: not part of any callback's time.
    await relay.publisher.publish({ url: `${receiver.origin}/warm-up`, body: 0 });
    await receiver.waitFor((r) => r.length === 1, 10_000);
    // Sub-second parts all over the second, from under one level (straight to the lane) to several levels.
    const offsets = [400, 1_130, 1_260, 1_999, 2_510, 3_050, 4_730, 6_875];
    const start = Date.now();
    const dueAt = new Map<string, number>();
    const confirmedAt = new Map<string, number>();
    await Promise.all(
      offsets.map(async (offset) => {
        const path = `/at${offset}`;
        dueAt.set(path, start + offset);
        await relay.publisher.publish({ url: `${receiver.origin}${path}`, body: { offset } }, { deliverAt: new Date(start + offset) });
        confirmedAt.set(path, Date.now());
      }),
    );
    await receiver.waitFor((r) => r.length === offsets.length + 1, 20_000);
    const lateness: number[] = [];
    for (const request of receiver.requests.slice(1)) {
      const due = dueAt.get(request.path) as number;
      // A publish the broker confirmed after the due time (a busy machine) is due at once.
      const late = request.at - Math.max(due, confirmedAt.get(request.path) as number);
      expect(request.at - due, `${request.path} arrived ${request.at - due} ms after its due time`).toBeGreaterThanOrEqual(-EARLY_MS);
      expect(late, `${request.path} arrived ${late} ms late`).toBeLessThanOrEqual(LATE_MS);
      lateness.push(late);
    }
    expect(median(lateness), `lateness ${lateness.join(', ')} ms`).toBeLessThanOrEqual(LATE_MEDIAN_MS);
  });

  it('a retry with a sub-second delay arrives within 250 ms of it', async () => {
    // The first attempt fails; the retry is due RETRY_SCHEDULE after the worker settled it.
    const receiver = await open.receiver((request) => ({ status: request.nth === 1 ? 503 : 200 }));
    const relay = await open.relay({ DELAY_MODE: 'queues', RETRY_SCHEDULE: '1700ms', RETRY_JITTER: '0' });
    await relay.startWorker();
    for (let i = 0; i < 5; i += 1) await relay.publisher.publish({ url: `${receiver.origin}/r${i}`, body: i });
    await receiver.waitFor((r) => r.length === 10, 20_000);
    const lateness: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const [first, second] = receiver.to(`/r${i}`);
      const late = (second?.at as number) - ((first?.at as number) + 1_700);
      expect(late, `retry ${i} was ${late} ms late`).toBeGreaterThanOrEqual(-EARLY_MS);
      expect(late, `retry ${i} was ${late} ms late`).toBeLessThanOrEqual(LATE_MS);
      lateness.push(late);
    }
    expect(median(lateness), `lateness ${lateness.join(', ')} ms`).toBeLessThanOrEqual(LATE_MEDIAN_MS);
  });

  it("a publisher's first delayed publish falls due when asked, not later by its topology declaration", async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: 'queues' });
    await relay.startWorker();
    // A new publisher declares the topology before its first publish goes out: a second or more on 4.3.
    const publisher = createPublisher(relay.config, createLogger('silent'), Promise.resolve(undefined));
    try {
      // Far enough ahead that the declaration is over before it is due, however loaded the machine.
      const at = Date.now() + 4_000;
      await publisher.publish({ url: `${receiver.origin}/first`, body: 0 }, { deliverAt: new Date(at) });
      // Confirmed, so declared: on a loaded machine the declaration can run past `at` (then it is due at once).
      const declaredBy = Date.now();
      await receiver.waitFor((r) => r.length === 1, 10_000);
      const arrived = receiver.requests[0]?.at as number;
      expect(arrived - at).toBeGreaterThanOrEqual(-EARLY_MS);
      // Counted from the end of the declaration, it came as late as the declaration took (1.5 s on 4.3),
      // or a whole delay after a declaration that ran past `at`.
      expect(arrived - Math.max(at, declaredBy)).toBeLessThan(LATE_MS);
    } finally {
      await publisher.close();
    }
  });

  it('a callback held until due by a worker that stops is delivered by the next one, on time', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: 'queues' });
    const first = await relay.startWorker();
    // A first publish (to another receiver) waits for the publisher's topology declaration, a second or
    // more on 4.3, and a deliverAt counts from the call: without it the callback could be due at once.
    const other = await open.receiver(() => ({ status: 200 }));
    await relay.publisher.publish({ url: `${other.origin}/warm-up`, body: 0 });
    const at = Date.now() + 1_200;
    // Under one level's worth: straight to the lane, where the first worker holds it, unacked.
    await relay.publisher.publish({ url: `${receiver.origin}/held`, body: 'held' }, { deliverAt: new Date(at) });
    await new Promise((resolve) => setTimeout(resolve, 400));
    await first.stop();
    expect(receiver.requests).toHaveLength(0);
    await relay.startWorker();
    await receiver.waitFor((r) => r.length === 1, 10_000);
    const late = (receiver.requests[0]?.at as number) - at;
    expect(late).toBeGreaterThanOrEqual(-EARLY_MS);
    // The second worker's start (connect, declare, consume) is in it: loose on a busy machine.
    expect(late).toBeLessThan(10_000);
  });

  it('a stopping worker gives a held callback back to its lane at once, unattempted, while it still drains an attempt', async () => {
    let release = (): void => {};
    const answered = new Promise<void>((resolve) => (release = resolve));
    // The in-flight attempt is answered only once the test saw what it waits for: the drain lasts until then.
    const receiver = await open.receiver((request) => (request.path === '/slow' ? { status: 200, after: answered } : { status: 200 }));
    const relay = await open.relay({ DELAY_MODE: 'queues', DRAIN_TIMEOUT: '60s', HTTP_TIMEOUT: '60s', SLOW_THRESHOLD: '60s' });
    const first = await relay.startWorker();
    await relay.publisher.publish({ url: `${receiver.origin}/slow`, body: 'slow' });
    await receiver.waitFor((r) => r.length === 1, 10_000);
    // Under one level's worth (1.2 s less the levels' 250 ms lead is no whole second): straight to the
    // lane, where the worker holds it, unacked, until due.
    const at = Date.now() + 1_200;
    await relay.publisher.publish({ url: `${receiver.origin}/held`, body: 'held' }, { deliverAt: new Date(at) });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const lanes = [...relay.names.workQueues, relay.names.slowQueue];
    const ready = async (): Promise<number> =>
      (await Promise.all(lanes.map((queue) => relay.messageCount(queue)))).reduce((a, b) => a + b, 0);
    expect(await ready()).toBe(0);
    let stopped = false;
    const stopping = first.stop().then(() => (stopped = true));
    try {
      // Back in its lane while the stopping worker still waits for the slow answer.
      const deadline = Date.now() + 15_000;
      while ((await ready()) === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await ready(), 'the held callback is back in its lane').toBe(1);
      expect(stopped).toBe(false);
    } finally {
      release();
      await stopping;
    }
    expect(receiver.to('/held')).toHaveLength(0);
    await relay.startWorker();
    await receiver.waitFor((r) => r.length === 2, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.to('/held')).toHaveLength(1);
    expect((receiver.to('/held')[0]?.at as number) - at).toBeGreaterThanOrEqual(-EARLY_MS);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });

  it("callbacks falling due faster than one level queue's dead-letter worker handled before are all delivered", async () => {
    // Before, a level's dead-letter worker moved about 2,200 a second: here 3,000 fall due within one
    // second, through the same few levels, all at once.
    const count = 3_000;
    const receiver = await open.receiver(() => ({ status: 200 }));
    // ISOLATION=off and a long HTTP_TIMEOUT: this is about the delay path. On a busy machine slow
    // attempts could open the one target's circuit or time out, and their retries (15 s and more
    // later) are another subject.
    const relay = await open.relay({
      DELAY_MODE: 'queues',
      ISOLATION: 'off',
      HTTP_TIMEOUT: '20s',
      PUBLISH_BUFFER_LIMIT: '5000',
      PUBLISH_TIMEOUT: '60s',
    });
    await relay.startWorker();
    const base = Date.now() + 20_000;
    const publishes: Array<Promise<unknown>> = [];
    for (let i = 0; i < count; i += 1) {
      publishes.push(
        relay.publisher.publish({ url: `${receiver.origin}/many/${i}`, body: i }, { deliverAt: new Date(base + (i * 1_000) / count) }),
      );
      if (publishes.length % 500 === 0) await Promise.all(publishes.slice(-500));
    }
    await Promise.all(publishes);
    expect(Date.now(), 'the publishing ended before the first was due').toBeLessThan(base);
    await receiver.waitFor((r) => new Set(r.map((request) => request.path)).size === count, 120_000);
    const early = receiver.requests.filter((request) => request.at < base - EARLY_MS);
    expect(early).toHaveLength(0);
  }, 200_000);
});
