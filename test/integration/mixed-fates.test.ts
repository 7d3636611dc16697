import { expect, it } from 'vitest';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { HEADER } from '../../src/message/headers.js';
import { describeEachMode, sleep } from '../support/modes.js';
import type { Receiver } from '../support/receiver.js';
import type { RelayFixture } from '../support/relay.js';

let relay: RelayFixture | undefined;
let receiver: Receiver | undefined;
const open = openedInEachTest();

const FATES = ['ok', 'flaky', 'fail', 'gone'] as const;

describeEachMode('mixed fates', (mode) => {
  it('1000 callbacks: delivered + dead-lettered = published, each exactly once', async () => {
    receiver = await open.receiver(({ path, nth }) => {
      if (path.startsWith('/ok')) return { status: 200 };
      if (path.startsWith('/flaky')) return { status: nth === 1 ? 503 : 200 };
      if (path.startsWith('/fail')) return { status: 500 };
      return { status: 404 };
    });
    // HTTP_TIMEOUT 20 s: on a CPU-starved machine a slow answer must not become a timeout and an extra attempt.
    relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '2', PREFETCH: '50', HTTP_TIMEOUT: '20s' });
    await relay.startWorker();
    const published = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => {
        const fate = FATES[i % FATES.length] as (typeof FATES)[number];
        return relay!.publisher.publish({ url: `${receiver!.origin}/${fate}/${i}`, body: { i } }).then(({ id }) => ({ id, fate }));
      }),
    );
    const expectDead = published.filter((p) => p.fate === 'fail' || p.fate === 'gone').length;
    await relay.waitForDead(expectDead, 60_000);
    const delivered = (): Set<string> =>
      new Set(
        receiver!.requests
          .filter((r) => r.path.startsWith('/ok') || (r.path.startsWith('/flaky') && r.nth === 2))
          .map((r) => String(r.headers['webhook-id'])),
      );
    await receiver.waitFor(() => delivered().size === published.length - expectDead, 30_000);
    await sleep(1_500);
    const dead = await relay.drainDead();
    const deadIds = dead.map((m) => String(m.properties.messageId));
    expect(new Set(deadIds).size).toBe(dead.length);
    expect(delivered().size + dead.length).toBe(published.length);
    expect(new Set([...delivered(), ...deadIds])).toEqual(new Set(published.map((p) => p.id)));
    const reasons = dead.map((m) => `${m.properties.headers?.[HEADER.reason]}/${m.properties.headers?.[HEADER.attempts]}`);
    expect(reasons.filter((r) => r === 'exhausted/2')).toHaveLength(250);
    expect(reasons.filter((r) => r === 'rejected/1')).toHaveLength(250);
    expect(receiver.requests).toHaveLength(250 + 250 * 2 + 250 * 2 + 250);
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
  });
});
