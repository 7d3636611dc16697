import type { GetMessage } from 'amqplib';
import { describe, expect, it, vi } from 'vitest';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { loadConfig } from '../../src/config/load-config.js';
import { createWorker } from '../../src/consumer/worker.js';
import { createLogger } from '../../src/logger.js';
import { freePort } from '../support/free-port.js';
import { sleep } from '../support/modes.js';
import type { Receiver } from '../support/receiver.js';
import type { RelayFixture } from '../support/relay.js';

let relay: RelayFixture | undefined;
let receiver: Receiver | undefined;
const open = openedInEachTest();

const get = async (port: number, path: string): Promise<{ status: number; text: string }> => {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, text: await response.text() };
};

/** The value of one sample in Prometheus text format, or undefined. */
const sample = (text: string, line: string): number | undefined => {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
};

/** Takes every message `queue` holds now (no ack) and appends it to `into`. */
async function takeAll(fixture: RelayFixture, queue: string, into: GetMessage[]): Promise<void> {
  for (let m = await fixture.channel.get(queue, { noAck: true }); m; m = await fixture.channel.get(queue, { noAck: true })) into.push(m);
}

describe('operations', () => {
  it('metrics over HTTP count attempts and outcomes; /healthz and /readyz answer', async () => {
    receiver = await open.receiver(({ path }) => ({ status: path === '/gone' ? 404 : 200 }));
    const port = await freePort();
    relay = await open.relay({ METRICS_PORT: String(port) });
    const worker = await relay.startWorker();
    expect(worker.metricsPort).toBe(port);
    await relay.publisher.publish({ url: `${receiver.origin}/ok`, body: 1 });
    await relay.publisher.publish({ url: `${receiver.origin}/gone`, body: 2 });
    relay.channel.publish(relay.names.exchange, 'deliver', Buffer.from('not json'));
    await relay.waitForDead(2);
    await sleep(200);
    // A dead-letter copy is in P.dead before its original is acked and counted, and in flight until then.
    await vi.waitFor(
      async () => {
        const { status, text } = await get(port, '/metrics');
        expect(status).toBe(200);
        expect(sample(text, 'callback_relay_callbacks_total{outcome="delivered",reason=""}')).toBe(1);
        expect(sample(text, 'callback_relay_callbacks_total{outcome="dead",reason="rejected"}')).toBe(1);
        expect(sample(text, 'callback_relay_callbacks_total{outcome="dead",reason="invalid"}')).toBe(1);
        expect(sample(text, 'callback_relay_attempts_total{lane="0",result="success"}')).toBe(1);
        expect(sample(text, 'callback_relay_attempts_total{lane="0",result="terminal"}')).toBe(1);
        expect(sample(text, 'callback_relay_attempt_duration_seconds_count{lane="0"}')).toBe(2);
        expect(sample(text, 'callback_relay_publish_confirm_seconds_count{kind="dead"}')).toBe(2);
        expect(sample(text, 'callback_relay_in_flight')).toBe(0);
        expect(sample(text, 'callback_relay_degraded_targets')).toBe(0);
        expect(text).toContain('process_cpu_user_seconds_total');
        expect(text).not.toContain(receiver!.origin);
      },
      { timeout: 10_000 },
    );
    // ?name= picks metrics: a poller's cheap read, without Node's default metrics.
    const picked = await get(port, '/metrics?name=callback_relay_callbacks_total&name=callback_relay_in_flight&name=no_such_metric');
    expect(picked.status).toBe(200);
    expect(sample(picked.text, 'callback_relay_callbacks_total{outcome="delivered",reason=""}')).toBe(1);
    expect(sample(picked.text, 'callback_relay_in_flight')).toBe(0);
    expect(picked.text).not.toContain('process_cpu_user_seconds_total');
    expect(picked.text).not.toContain('callback_relay_attempts_total');
    expect(await get(port, '/healthz')).toEqual({ status: 200, text: 'ok\n' });
    expect(await get(port, '/readyz')).toEqual({ status: 200, text: 'ready\n' });
  });

  it('/readyz is 503 while the broker is unreachable, /healthz is 200', async () => {
    const port = await freePort();
    const config = loadConfig({ AMQP_URL: 'amqp://guest:guest@127.0.0.1:1', METRICS_PORT: String(port), LOG_LEVEL: 'silent' });
    const worker = createWorker(config, createLogger('silent'));
    const starting = worker.start().catch(() => {});
    await sleep(300);
    try {
      expect((await get(port, '/healthz')).status).toBe(200);
      expect(await get(port, '/readyz')).toEqual({ status: 503, text: 'not ready\n' });
      expect(worker.ready).toBe(false);
    } finally {
      await worker.stop();
      await starting;
    }
  });

  it('outcome events on P.events: delivered, retry-scheduled (with the next attempt time), dead', async () => {
    receiver = await open.receiver(({ path, nth }) => ({ status: path === '/gone' ? 404 : path === '/flaky' && nth === 1 ? 503 : 200 }));
    relay = await open.relay({ RETRY_SCHEDULE: '1s' });
    await relay.startWorker();
    const { queue } = await relay.channel.assertQueue('', { exclusive: true });
    await relay.channel.bindQueue(queue, relay.names.eventsExchange, '#');
    const ok = await relay.publisher.publish({ url: `${receiver.origin}/ok`, body: { secret: 'do-not-leak' } });
    const flaky = await relay.publisher.publish({ url: `${receiver.origin}/flaky`, body: 2 });
    const gone = await relay.publisher.publish({ url: `${receiver.origin}/gone`, body: 3 });
    await relay.waitForDead(1);
    await receiver.waitFor((r) => r.length === 4);
    await sleep(300);
    // Outcome events are published after the HTTP response: take them until the four expected are there (the sleep
    // gives an unexpected one time to show).
    const messages: GetMessage[] = [];
    const events = (): Record<string, unknown>[] => messages.map((m) => JSON.parse(m.content.toString()));
    const of = (id: string) =>
      events()
        .filter((e) => e.id === id)
        .map((e) => e.type);
    await vi.waitFor(
      async () => {
        await takeAll(relay!, queue, messages);
        expect([of(ok.id).length, of(flaky.id).length, of(gone.id).length]).toEqual([1, 2, 1]);
      },
      { timeout: 10_000 },
    );
    for (const m of messages) {
      expect(m.fields.routingKey).toBe(JSON.parse(m.content.toString()).type);
      expect(m.content.toString()).not.toContain('do-not-leak');
    }
    expect(of(ok.id)).toEqual(['delivered']);
    expect(of(flaky.id)).toEqual(['retry-scheduled', 'delivered']);
    expect(of(gone.id)).toEqual(['dead']);
    const retry = events().find((e) => e.type === 'retry-scheduled');
    expect(retry).toMatchObject({ attempt: 1, status: 503, url: `${receiver.origin}/flaky` });
    expect(Date.parse(String(retry?.nextAttemptAt))).toBeGreaterThan(Date.parse(String(retry?.at)));
    expect(events().find((e) => e.type === 'dead')).toMatchObject({ reason: 'rejected', status: 404 });
  });

  it('outcome events nobody listens for are paused, and flow within 1.25 s of a queue being bound, after one probe', async () => {
    receiver = await open.receiver(() => ({ status: 200 }));
    relay = await open.relay();
    await relay.startWorker();
    for (let i = 0; i < 5; i++) await relay.publisher.publish({ url: `${receiver.origin}/before`, body: i });
    await receiver.waitFor((r) => r.length === 5);
    const { queue } = await relay.channel.assertQueue('', { exclusive: true });
    await relay.channel.bindQueue(queue, relay.names.eventsExchange, 'delivered');
    await sleep(1_100);
    // The pause is over: the next event is a probe, and none follows it while it may still come back.
    const probe = (await relay.publisher.publish({ url: `${receiver.origin}/probe`, body: 0 })).id;
    await receiver.waitFor((r) => r.length === 6);
    await sleep(400);
    const after = [probe];
    for (let i = 0; i < 5; i++) after.push((await relay.publisher.publish({ url: `${receiver.origin}/after`, body: i })).id);
    await receiver.waitFor((r) => r.length === 11);
    await sleep(300);
    // Outcome events are published after the HTTP response: take them until the six are there (and nothing else).
    const messages: GetMessage[] = [];
    await vi.waitFor(
      async () => {
        await takeAll(relay!, queue, messages);
        expect(messages.map((m) => JSON.parse(m.content.toString()).id).sort()).toEqual([...after].sort());
      },
      { timeout: 10_000 },
    );
  });

  it('logs: one info line per dead-letter, attempts only at debug, no payloads or broker passwords', async () => {
    receiver = await open.receiver(({ path }) => ({ status: path === '/gone' ? 404 : 200 }));
    relay = await open.relay();
    const worker = open.worker(relay.config);
    await worker.consuming;
    await relay.publisher.publish({ url: `${receiver.origin}/ok`, body: { card: 'SECRET-PAYLOAD' } });
    await relay.publisher.publish({ url: `${receiver.origin}/gone`, body: { card: 'SECRET-PAYLOAD' } });
    await relay.waitForDead(1);
    await sleep(300);
    worker.child.kill('SIGTERM');
    await worker.exited;
    const lines = worker
      .output()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.filter((l) => l.msg === 'callback dead-lettered')).toHaveLength(1);
    expect(lines.filter((l) => l.msg === 'attempt')).toHaveLength(0);
    expect(worker.output()).not.toContain('SECRET-PAYLOAD');
    expect(worker.output()).not.toContain('guest:guest');
  });
});
