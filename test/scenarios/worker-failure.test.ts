import { expect, it, vi } from 'vitest';
import { describeEachMode, sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import type { Receiver } from '../support/receiver.js';

const open = openedInEachTest();

const idsSince = (receiver: Receiver, since: number): Set<string> =>
  new Set(receiver.requests.filter((r) => r.at >= since).map((r) => String(r.headers['webhook-id'])));

describeEachMode('worker failure', (mode) => {
  it('a worker SIGKILLed with deliveries in flight: a second worker delivers them all', async () => {
    const receiver = await open.receiver(() => ({ status: 200, delayMs: 1_000 }));
    // One receiver origin: the per-target cap must not be what limits concurrency here.
    const relay = await open.relay({ DELAY_MODE: mode, PREFETCH: '10', TARGET_CONCURRENCY: '10', TARGET_INITIAL_CONCURRENCY: '10' });
    const ids = await Promise.all(
      Array.from({ length: 40 }, (_, i) => relay!.publisher.publish({ url: `${receiver!.origin}/slow/${i}`, body: i }).then((r) => r.id)),
    );
    const worker = open.worker(relay.config);
    await worker.consuming;
    await receiver.waitFor((r) => r.length >= 10);
    worker.child.kill('SIGKILL');
    await worker.exited;
    const killedAt = Date.now();
    await relay.startWorker();
    await receiver.waitFor(() => idsSince(receiver!, killedAt).size === ids.length, 60_000);
    expect(idsSince(receiver, killedAt)).toEqual(new Set(ids));
    await sleep(1_500);
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });

  it('SIGTERM drains: in-flight deliveries finish, the rest stay queued, exit within the drain timeout', async () => {
    const receiver = await open.receiver(() => ({ status: 200, delayMs: 800 }));
    const relay = await open.relay({
      DELAY_MODE: mode,
      PREFETCH: '5',
      TARGET_CONCURRENCY: '5',
      TARGET_INITIAL_CONCURRENCY: '5',
      DRAIN_TIMEOUT: '5s',
      // The 800 ms answers never time out on a loaded machine: a timed-out attempt is sent again, and the count below is exact.
      HTTP_TIMEOUT: '20s',
    });
    const ids = await Promise.all(
      Array.from({ length: 30 }, (_, i) => relay!.publisher.publish({ url: `${receiver!.origin}/d/${i}`, body: i }).then((r) => r.id)),
    );
    const worker = open.worker(relay.config);
    await worker.consuming;
    await receiver.waitFor((r) => r.length >= 5);
    const termAt = Date.now();
    worker.child.kill('SIGTERM');
    const code = await worker.exited;
    expect(code).toBe(0);
    expect(Date.now() - termAt).toBeLessThan(5_000);
    expect(worker.output()).toContain('worker stopped');
    expect(worker.output()).not.toContain('drain timeout');
    const deliveredBeforeStop = receiver.requests.length;
    // The messages the worker gave back reach a quorum queue's ready count after a Raft commit.
    await vi.waitFor(async () => expect((await relay.messageCount(relay.names.workQueue)) + deliveredBeforeStop).toBe(ids.length), {
      timeout: 10_000,
    });
    await relay.startWorker();
    await receiver.waitFor((r) => new Set(r.map((x) => x.headers['webhook-id'])).size === ids.length, 30_000);
    await sleep(1_000);
    expect(receiver.requests).toHaveLength(ids.length);
  });
});
