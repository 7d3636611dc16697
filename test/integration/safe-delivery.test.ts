import { expect, it } from 'vitest';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { HEADER } from '../../src/message/headers.js';
import { verifyCallback } from '../../src/signing/verify-callback.js';
import { describeEachMode, sleep } from '../support/modes.js';
import type { Receiver } from '../support/receiver.js';
import type { RelayFixture } from '../support/relay.js';

let relay: RelayFixture | undefined;
let receiver: Receiver | undefined;
const open = openedInEachTest();

// 24+ random bytes as the spec asks; fixed so the test is repeatable.
const OLD = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const NEW = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

describeEachMode('safe delivery', (mode) => {
  it('signs every attempt; a receiver verifies them, with either secret during a rotation; webhook-id is stable', async () => {
    const verdicts: string[] = [];
    receiver = await open.receiver((request) => {
      for (const secret of [OLD, NEW]) {
        try {
          verifyCallback({ secret, headers: request.headers, body: request.body });
          verdicts.push(`${request.nth}:ok`);
        } catch (error) {
          verdicts.push(`${request.nth}:${(error as { code: string }).code}`);
        }
      }
      return { status: request.nth === 1 ? 503 : 204 };
    });
    relay = await open.relay({ DELAY_MODE: mode, SIGNING_SECRET: `${NEW} ${OLD}`, RETRY_SCHEDULE: '1s' });
    await relay.startWorker();
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/signed`, body: { amount: 42 } });
    await receiver.waitFor((r) => r.length === 2, 10_000);
    expect(verdicts).toEqual(['1:ok', '1:ok', '2:ok', '2:ok']);
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual([id, id]);
    expect(String(receiver.requests[0]?.headers['webhook-signature']).split(' ')).toHaveLength(2);
    const tampered = { ...receiver.requests[1]!.headers };
    expect(() => verifyCallback({ secret: NEW, headers: tampered, body: '{"amount":43}' })).toThrow(
      expect.objectContaining({ code: 'CR_ERR_SIGNATURE_INVALID' }),
    );
  });

  it('a target at a link-local (cloud metadata) address is refused: P.dead with reason forbidden-target, no request made', async () => {
    receiver = await open.receiver(() => ({ status: 200 }));
    relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '1s' });
    await relay.startWorker();
    await relay.publisher.publish({ url: 'http://169.254.169.254/latest/meta-data/', body: 1 });
    await relay.publisher.publish({ url: `${receiver.origin}/fine`, body: 2 });
    await relay.waitForDead(1);
    const [dead] = await relay.drainDead();
    expect(dead?.properties.headers).toMatchObject({ [HEADER.reason]: 'forbidden-target', [HEADER.attempts]: 1 });
    expect(String(dead?.properties.headers?.[HEADER.lastError])).toMatch(/^CR_ERR_FORBIDDEN_TARGET: .*link-local/);
    await receiver.waitFor((r) => r.length === 1);
  });

  it('by default (TARGET_POLICY=strict) loopback is refused unless TARGET_ALLOW lists it', async () => {
    receiver = await open.receiver(() => ({ status: 200 }));
    relay = await open.relay({ DELAY_MODE: mode, TARGET_ALLOW: '' });
    await relay.startWorker();
    await relay.publisher.publish({ url: `${receiver.origin}/strict`, body: 1 });
    await relay.waitForDead(1);
    const [dead] = await relay.drainDead();
    expect(dead?.properties.headers?.[HEADER.reason]).toBe('forbidden-target');
    expect(receiver.requests).toHaveLength(0);
    await relay.cleanup();
    relay = await open.relay({ DELAY_MODE: mode, TARGET_ALLOW: '127.0.0.0/8' });
    await relay.startWorker();
    await relay.publisher.publish({ url: `${receiver.origin}/allowed`, body: 1 });
    await receiver.waitFor((r) => r.length === 1);
  });

  it('an oversize message is parked as invalid at consume time, even when published around the producer', async () => {
    receiver = await open.receiver(() => ({ status: 200 }));
    relay = await open.relay({ DELAY_MODE: mode, MAX_PAYLOAD_BYTES: '2000' });
    await relay.startWorker();
    const big = JSON.stringify({ url: `${receiver.origin}/big`, body: 'x'.repeat(5_000) });
    relay.channel.publish(relay.names.exchange, 'deliver', Buffer.from(big), { messageId: 'big-1' });
    await relay.waitForDead(1);
    const [dead] = await relay.drainDead();
    expect(dead?.properties.headers).toMatchObject({ [HEADER.reason]: 'invalid' });
    expect(String(dead?.properties.headers?.[HEADER.lastError])).toMatch(/over the limit of 2000/);
    await sleep(200);
    expect(receiver.requests).toHaveLength(0);
  });
});
