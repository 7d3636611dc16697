import { expect, it } from 'vitest';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { HEADER } from '../../src/message/headers.js';
import { describeEachMode, sleep } from '../support/modes.js';
import type { Answer, Receiver } from '../support/receiver.js';
import type { RelayFixture } from '../support/relay.js';

let relay: RelayFixture | undefined;
let receiver: Receiver | undefined;
const open = openedInEachTest();

async function setUp(mode: string, env: Record<string, string>, script: (nth: number, path: string) => Answer) {
  receiver = await open.receiver((request) => script(request.nth, request.path));
  relay = await open.relay({ DELAY_MODE: mode, ...env });
  await relay.startWorker();
  return { relay, receiver };
}

const gaps = (times: number[]): number[] => times.slice(1).map((t, i) => t - (times[i] as number));

describeEachMode('delivery', (mode) => {
  it('delivers at the first attempt with the documented headers', async () => {
    const { relay, receiver } = await setUp(mode, {}, () => ({ status: 204 }));
    const { id } = await relay.publisher.publish({
      url: `${receiver.origin}/ok?x=1`,
      body: { hello: 'world' },
      headers: { 'x-tenant': 'acme' },
    });
    await receiver.waitFor((r) => r.length === 1);
    const [request] = receiver.requests;
    expect(request).toMatchObject({ method: 'POST', path: '/ok?x=1' });
    expect(request?.headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': id,
      'x-callback-attempt': '1',
      'x-tenant': 'acme',
    });
    expect(JSON.parse(request?.body ?? '')).toEqual({ hello: 'world' });
    await sleep(300);
    expect(receiver.requests).toHaveLength(1);
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });

  it('fails twice, then succeeds, with gaps that follow the schedule', async () => {
    const { relay, receiver } = await setUp(mode, { RETRY_SCHEDULE: '1s,2s', MAX_ATTEMPTS: '5' }, (nth) => ({
      status: nth <= 2 ? 500 : 200,
    }));
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/flaky`, body: [1, 2, 3], method: 'PUT' });
    await receiver.waitFor((r) => r.length === 3, 15_000);
    expect(receiver.requests.map((r) => r.headers['x-callback-attempt'])).toEqual(['1', '2', '3']);
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([id]));
    const [first, second] = gaps(receiver.requests.map((r) => r.at));
    expect(first).toBeGreaterThanOrEqual(900);
    expect(first).toBeLessThan(1_900);
    expect(second).toBeGreaterThanOrEqual(1_900);
    expect(second).toBeLessThan(2_900);
    await sleep(500);
    expect(receiver.requests).toHaveLength(3);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });

  it('always 500: exactly MAX_ATTEMPTS attempts, then P.dead with reason exhausted', async () => {
    const { relay, receiver } = await setUp(mode, { RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '3' }, () => ({ status: 500, body: 'boom' }));
    const { id } = await relay.publisher.publish({ id: 'order-42', url: `${receiver.origin}/down`, body: { n: 1 } });
    await relay.waitForDead(1, 15_000);
    expect(receiver.requests).toHaveLength(3);
    const [dead] = await relay.drainDead();
    const headers = dead?.properties.headers ?? {};
    expect(id).toBe('order-42');
    expect(dead?.properties.messageId).toBe('order-42');
    expect(JSON.parse(dead?.content.toString() ?? '')).toEqual({ id: 'order-42', url: `${receiver.origin}/down`, body: { n: 1 } });
    expect(headers).toMatchObject({
      [HEADER.reason]: 'exhausted',
      [HEADER.attempts]: 3,
      [HEADER.lastStatus]: 500,
      [HEADER.lastError]: 'HTTP 500',
    });
    const first = Date.parse(String(headers[HEADER.firstAttemptAt]));
    const last = Date.parse(String(headers[HEADER.lastAttemptAt]));
    expect(first).toBeLessThanOrEqual(receiver.requests[0]!.at);
    expect(last - first).toBeGreaterThanOrEqual(1_800);
    expect(headers['x-death']).toBeUndefined();
  });

  it('404: one attempt, then P.dead with reason rejected', async () => {
    const { relay, receiver } = await setUp(mode, { RETRY_SCHEDULE: '1s' }, () => ({ status: 404 }));
    await relay.publisher.publish({ url: `${receiver.origin}/gone`, body: null });
    await relay.waitForDead(1);
    await sleep(1_500);
    expect(receiver.requests).toHaveLength(1);
    const [dead] = await relay.drainDead();
    expect(dead?.properties.headers).toMatchObject({ [HEADER.reason]: 'rejected', [HEADER.attempts]: 1, [HEADER.lastStatus]: 404 });
  });

  it('503 with Retry-After: waits as asked instead of the schedule', async () => {
    const { relay, receiver } = await setUp(mode, { RETRY_SCHEDULE: '1s' }, (nth) =>
      nth === 1 ? { status: 503, headers: { 'retry-after': '3' } } : { status: 200 },
    );
    await relay.publisher.publish({ url: `${receiver.origin}/busy`, body: 'x' });
    await receiver.waitFor((r) => r.length === 2, 10_000);
    const [gap] = gaps(receiver.requests.map((r) => r.at));
    expect(gap).toBeGreaterThanOrEqual(2_900);
    expect(gap).toBeLessThan(4_000);
  });

  it('SUCCESS_BODY: a 200 without it is retried, the next 200 with it is delivered', async () => {
    const { relay, receiver } = await setUp(mode, { RETRY_SCHEDULE: '1s', SUCCESS_BODY: 'SUCCESS' }, (nth) => ({
      status: 200,
      body: nth === 1 ? 'FAIL' : 'SUCCESS',
    }));
    await relay.publisher.publish({ url: `${receiver.origin}/picky`, body: 1 });
    await receiver.waitFor((r) => r.length === 2, 10_000);
    await sleep(500);
    expect(receiver.requests).toHaveLength(2);
    expect(receiver.requests[1]?.headers['x-callback-attempt']).toBe('2');
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });

  it('malformed messages go to P.dead as invalid while good ones around them are delivered', async () => {
    const { relay, receiver } = await setUp(mode, {}, () => ({ status: 200 }));
    const bad = [
      'not json',
      JSON.stringify({ url: 'ftp://example.com/x', body: 1 }),
      JSON.stringify({ body: 1 }),
      JSON.stringify({ url: `${receiver.origin}/x`, body: 1, headers: { 'x-a': 5 } }),
      '[]',
    ];
    for (const [i, content] of bad.entries()) {
      await relay.publisher.publish({ url: `${receiver.origin}/good-${i}`, body: i });
      relay.channel.publish(relay.names.exchange, 'deliver', Buffer.from(content), { messageId: `bad-${i}` });
    }
    await relay.waitForDead(bad.length);
    await receiver.waitFor((r) => r.length === bad.length);
    const dead = await relay.drainDead();
    expect(dead.map((m) => m.properties.headers?.[HEADER.reason])).toEqual(bad.map(() => 'invalid'));
    expect(dead.map((m) => m.properties.headers?.[HEADER.attempts])).toEqual(bad.map(() => 0));
    expect(dead.map((m) => m.content.toString())).toEqual(bad);
    expect(String(dead[1]?.properties.headers?.[HEADER.lastError])).toMatch(/^url: must be http or https/);
    expect(String(dead[3]?.properties.headers?.[HEADER.lastError])).toMatch(/^headers\.x-a: must be a string/);
  });
});
