import { afterEach, expect, it } from 'vitest';
import { describeEachMode, sleep } from '../support/modes.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startRelay, type RelayFixture } from '../support/relay.js';

let relay: RelayFixture | undefined;
let receivers: Receiver[] = [];
afterEach(async () => {
  await relay?.cleanup();
  await Promise.all(receivers.map((r) => r.close()));
  relay = undefined;
  receivers = [];
});

const ids = (requests: { headers: Record<string, unknown> }[]): Set<string> => new Set(requests.map((r) => String(r.headers['webhook-id'])));

describeEachMode('target isolation', (mode) => {
  it('a hanging target does not hold up a healthy one, and its own callbacks still end delivered', async () => {
    const hangUntil = Date.now() + 6_000;
    const hanging = await startReceiver(() => (Date.now() < hangUntil ? 'hang' : { status: 200 }));
    const healthy = await startReceiver(() => ({ status: 200 }));
    receivers = [hanging, healthy];
    relay = await startRelay({
      DELAY_MODE: mode,
      HTTP_TIMEOUT: '5s',
      PREFETCH: '20',
      TARGET_CONCURRENCY: '4',
      SLOW_PREFETCH: '4',
      SLOW_THRESHOLD: '500ms',
      HEALTH_WINDOW: '6',
      DEGRADE_THRESHOLD: '3',
      QUIET_PERIOD: '1s',
      RETRY_SCHEDULE: '1s',
      MAX_ATTEMPTS: '5',
    });
    await relay.startWorker();
    // The worst case: more hanging callbacks than PREFETCH, at the head of the queue. Without
    // isolation every slot would wait on them for HTTP_TIMEOUT.
    const slow = await Promise.all(Array.from({ length: 30 }, (_, i) => relay!.publisher.publish({ url: `${hanging.origin}/h/${i}`, body: i })));
    const publishedAt = Date.now();
    const fast = await Promise.all(Array.from({ length: 100 }, (_, i) => relay!.publisher.publish({ url: `${healthy.origin}/f/${i}`, body: i })));
    await healthy.waitFor((r) => ids(r).size === fast.length, 10_000);
    const healthyDoneAfter = Date.now() - publishedAt;
    expect(healthyDoneAfter, 'all healthy callbacks delivered while the other target hangs').toBeLessThan(2_000);
    expect(Date.now()).toBeLessThan(hangUntil);
    expect(hanging.requests.length, 'the hanging target is still being tried').toBeGreaterThan(0);

    const answered = (): Set<string> => ids(hanging.requests.filter((r) => r.at >= hangUntil));
    await hanging.waitFor(() => answered().size === slow.length, 60_000);
    expect(answered()).toEqual(new Set(slow.map((s) => s.id)));
    await sleep(500);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    expect(await relay.messageCount(relay.names.slowQueue)).toBe(0);
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
    // Diverting to the slow lane is not an attempt: no callback used more than its timeouts allow.
    for (const request of hanging.requests) expect(Number(request.headers['x-callback-attempt'])).toBeLessThanOrEqual(4);
  });

  it('ISOLATION=off delivers through the main lane only', async () => {
    const receiver = await startReceiver(() => ({ status: 200 }));
    receivers = [receiver];
    relay = await startRelay({ DELAY_MODE: mode, ISOLATION: 'off', PREFETCH: '10', TARGET_CONCURRENCY: '1' });
    await relay.startWorker();
    await Promise.all(Array.from({ length: 50 }, (_, i) => relay!.publisher.publish({ url: `${receiver.origin}/${i}`, body: i })));
    await receiver.waitFor((r) => r.length === 50);
    expect(await relay.messageCount(relay.names.slowQueue)).toBe(0);
  });
});
