import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { HEADER } from '../../src/message/headers.js';
import { describeEachMode, sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';

const open = openedInEachTest();
const dir = mkdtempSync(join(tmpdir(), 'retry-policies-'));
let files = 0;

/** Writes a RETRY_POLICIES_FILE and returns its path. */
function policiesFile(policies: Record<string, Record<string, unknown>>): string {
  const path = join(dir, `policies-${(files += 1)}.json`);
  writeFileSync(path, JSON.stringify(policies));
  return path;
}

const gaps = (times: number[]): number[] => times.slice(1).map((t, i) => t - (times[i] as number));

describeEachMode('retry policies', (mode) => {
  it('two policies side by side: each callback gets its own schedule, attempts, timeout and success body', async () => {
    const receiver = await open.receiver((request) => {
      if (request.path === '/slow') return { status: 200, delayMs: 1_000 };
      return { status: 200, body: 'ok' };
    });
    const file = policiesFile({
      // Every attempt at /slow times out after 500ms, though the worker's HTTP_TIMEOUT is 2s.
      fast: { schedule: '1s', maxAttempts: 3, timeout: '500ms' },
      // /picky answers "ok", which this policy does not count as success.
      picky: { schedule: '2s', maxAttempts: 2, successBody: 'success' },
    });
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '1', RETRY_POLICIES_FILE: file });
    await relay.startWorker();
    await relay.publisher.publish({ id: 'fast-1', url: `${receiver.origin}/slow`, body: 1, policy: 'fast' });
    await relay.publisher.publish({ id: 'picky-1', url: `${receiver.origin}/picky`, body: 2, policy: 'picky' });
    // Without a policy: the worker's settings (no success body required).
    await relay.publisher.publish({ id: 'plain-1', url: `${receiver.origin}/plain`, body: 3 });
    await relay.waitForDead(2, 30_000);

    expect(receiver.to('/slow')).toHaveLength(3);
    expect(receiver.to('/picky')).toHaveLength(2);
    expect(receiver.to('/plain')).toHaveLength(1);
    const [fastGap1, fastGap2] = gaps(receiver.to('/slow').map((r) => r.at));
    // Attempt, 500ms timeout, 1s delay: the next attempt starts about 1.5s after the previous one.
    for (const gap of [fastGap1, fastGap2]) expect(gap).toBeGreaterThanOrEqual(1_400);
    const [pickyGap] = gaps(receiver.to('/picky').map((r) => r.at));
    expect(pickyGap).toBeGreaterThanOrEqual(1_900);

    const dead = new Map(
      (await relay.drainDead()).map((message) => [message.properties.messageId as string, message.properties.headers ?? {}]),
    );
    expect(dead.get('fast-1')).toMatchObject({
      [HEADER.reason]: 'exhausted',
      [HEADER.attempts]: 3,
      [HEADER.lastError]: 'TIMEOUT: no complete answer within 500ms',
      [HEADER.policy]: 'fast',
      [HEADER.schedule]: '1s',
      [HEADER.maxAttempts]: 3,
      [HEADER.timeout]: '500ms',
      [HEADER.successBody]: '',
    });
    expect(dead.get('picky-1')).toMatchObject({
      [HEADER.reason]: 'exhausted',
      [HEADER.attempts]: 2,
      [HEADER.lastError]: 'HTTP 200 without the expected success body',
      [HEADER.policy]: 'picky',
      [HEADER.timeout]: '2s',
      [HEADER.successBody]: 'success',
    });
    expect(dead.has('plain-1')).toBe(false);
  });

  it('an unknown policy: P.dead with reason invalid, naming the policy, no request made', async () => {
    const receiver = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_POLICIES_FILE: policiesFile({ payment: { maxAttempts: 5 } }) });
    await relay.startWorker();
    await relay.publisher.publish({ id: 'unknown-1', url: `${receiver.origin}/x`, body: { a: 1 }, policy: 'refund' });
    await relay.waitForDead(1);
    const [dead] = await relay.drainDead();
    expect(dead?.properties.headers).toMatchObject({
      [HEADER.reason]: 'invalid',
      [HEADER.attempts]: 0,
      [HEADER.lastError]: 'policy: "refund" is not a retry policy of this worker (RETRY_POLICIES_FILE)',
    });
    expect(JSON.parse(dead?.content.toString() ?? '')).toMatchObject({ id: 'unknown-1', policy: 'refund' });
    await sleep(300);
    expect(receiver.requests).toHaveLength(0);
  });

  it("a retry keeps the policy the first worker resolved, though the next worker's file says otherwise", async () => {
    const receiver = await open.receiver(() => ({ status: 500 }));
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '1' });
    const first = await relay.startWorker({}, { retryPoliciesFile: policiesFile({ payment: { schedule: '1s', maxAttempts: 3 } }) });
    await relay.publisher.publish({ id: 'pay-1', url: `${receiver.origin}/pay`, body: 1, policy: 'payment' });
    await receiver.waitFor((requests) => requests.length === 1);
    // Drains: the first attempt's retry copy is stored before the worker closes.
    await first.stop();
    expect(receiver.requests).toHaveLength(1);
    // The second worker's own payment policy allows 2 attempts, with a 5s delay.
    await relay.startWorker({}, { retryPoliciesFile: policiesFile({ payment: { schedule: '5s', maxAttempts: 2, timeout: '1s' } }) });
    await relay.waitForDead(1, 30_000);
    expect(receiver.requests).toHaveLength(3);
    const [, secondGap] = gaps(receiver.requests.map((r) => r.at));
    expect(secondGap).toBeLessThan(4_000);
    const [dead] = await relay.drainDead();
    expect(dead?.properties.headers).toMatchObject({
      [HEADER.reason]: 'exhausted',
      [HEADER.attempts]: 3,
      [HEADER.policy]: 'payment',
      [HEADER.schedule]: '1s',
      [HEADER.maxAttempts]: 3,
      // The first worker's HTTP_TIMEOUT, which its policy left to the default.
      [HEADER.timeout]: '2s',
    });
  });
});
