import { expect, it } from 'vitest';
import { describeEachMode, sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';

const open = openedInEachTest();

describeEachMode('ordered delivery through a worker SIGKILL', (mode) => {
  it('a worker that takes a shard over reads its log: the held key keeps its order, its followers run after its head', async () => {
    // k/0 fails twice; while it waits for its retry, k/1..5 go to the shard's log. Then its worker dies.
    const receiver = await open.receiver(({ path, nth }) => (path === '/k/0' && nth <= 2 ? { status: 503 } : { status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '3s', MAX_ATTEMPTS: '5', ORDERED_SHARDS: '1' });
    const first = open.worker(relay.config);
    await first.consuming;
    for (let n = 0; n < 6; n += 1) await relay.publisher.publish({ url: `${receiver.origin}/k/${n}`, body: { n }, orderKey: 'k' });
    await receiver.waitFor((requests) => requests.length >= 1, 10_000);
    await sleep(1_000);
    first.child.kill('SIGKILL');
    await first.exited;
    // Callbacks of another key published meanwhile go on once a worker owns the shard again.
    await relay.publisher.publish({ url: `${receiver.origin}/j/0`, body: {}, orderKey: 'j' });
    await relay.startWorker();
    await receiver.waitFor((requests) => requests.some((r) => r.path === '/k/5') && requests.some((r) => r.path === '/j/0'), 30_000);
    await sleep(1_000);
    const seen = receiver.requests.filter((r) => r.path.startsWith('/k/')).map((r) => Number(r.path.split('/')[2]));
    for (let i = 1; i < seen.length; i += 1) expect(seen[i]! >= seen[i - 1]!, `k saw ${seen.join(',')}`).toBe(true);
    expect(new Set(seen)).toEqual(new Set([0, 1, 2, 3, 4, 5]));
    expect(seen.filter((n) => n === 0).length).toBeGreaterThanOrEqual(3);
  });
});
