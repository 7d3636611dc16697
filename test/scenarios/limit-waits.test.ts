import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { execInContainer } from '../support/container-broker.js';
import { freePort } from '../support/free-port.js';
import { localRabbitmqctl, type LocalNode } from '../support/local-broker.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { NO_RESTART, restartableBroker, type RestartableBroker } from '../support/restartable-broker.js';

/**
 * A limit that makes callbacks wait longer than the broker's consumer timeout must not leave them
 * unacked in the worker: the broker would close the channel, requeue every unacked message on it (other
 * targets' attempts too) and count toward the delivery limit
 * (https://www.rabbitmq.com/docs/consumers#acknowledgement-timeout). A broker of this file's own runs with
 * a short consumer timeout, the workers a LIMIT_HOLD_MAX well below it; the limit spreads the callbacks
 * over four times that timeout.
 */
const CONSUMER_TIMEOUT_MS = 30_000;
const RATE_PER_MINUTE = 30;
const CALLBACKS = 60;

let broker: RestartableBroker | undefined;
const open = openedInEachTest();

/** `rabbitmqctl ARGS` on the file's broker, a container or a throwaway node. */
async function ctl(own: RestartableBroker, args: string[]): Promise<string> {
  if (own.containerId) return execInContainer(own.containerId, ['rabbitmqctl', ...args]);
  if (!own.node) throw new Error('the broker of this file is neither a container nor a node started here');
  return localRabbitmqctl(own.node.serverBin, { node: own.node.name, home: own.node.home } as LocalNode, args);
}

beforeAll(async () => {
  broker = await restartableBroker();
  // Channels read the timeout when they open: every channel of this file's workers gets the short one.
  if (broker) await ctl(broker, ['eval', `application:set_env(rabbit, consumer_timeout, ${CONSUMER_TIMEOUT_MS}).`]);
}, 180_000);

afterAll(async () => {
  await broker?.stop();
});

it.skipIf(process.env.TEST_BROKER === 'none')(
  `a limit of ${RATE_PER_MINUTE}/m on ${CALLBACKS} callbacks with a ${CONSUMER_TIMEOUT_MS / 1_000} s consumer timeout: no channel closed, each delivered once, at the limit`,
  async (context) => {
    if (!broker) return context.skip(NO_RESTART);
    const receiver = await open.receiver(() => ({ status: 200 }));
    const limits = join(mkdtempSync(join(tmpdir(), 'limit-waits-')), 'limits.json');
    writeFileSync(limits, JSON.stringify({ [receiver.origin]: { rate: `${RATE_PER_MINUTE}/m`, burst: 1 } }));
    const relay = await open.relay({
      AMQP_URL: broker.url,
      TARGET_LIMITS_FILE: limits,
      LIMIT_HOLD_MAX: '10s',
      PREFETCH: '10',
      METRICS_PORT: String(await freePort()),
    });
    const worker = await relay.startWorker();
    const started = Date.now();
    const ids = await Promise.all(
      Array.from({ length: CALLBACKS }, (_, i) => relay.publisher.publish({ url: `${receiver.origin}/n/${i}`, body: i }).then((r) => r.id)),
    );
    const spreadMs = ((CALLBACKS - 1) * 60_000) / RATE_PER_MINUTE;
    await receiver.waitFor((requests) => new Set(requests.map((r) => r.headers['webhook-id'])).size === CALLBACKS, spreadMs + 60_000);
    const counts = new Map<unknown, number>();
    for (const request of receiver.requests)
      counts.set(request.headers['webhook-id'], (counts.get(request.headers['webhook-id']) ?? 0) + 1);
    // Once each: a channel closed for a timeout would have requeued what it held, delivered a second time.
    expect(new Set(counts.keys())).toEqual(new Set(ids));
    expect([...counts.values()].filter((n) => n > 1)).toEqual([]);
    expect(receiver.requests.every((r) => r.headers['x-callback-attempt'] === '1')).toBe(true);
    // At the limit: never more than its rate and burst in any minute, and no faster in all.
    const at = receiver.requests.map((r) => r.at).sort((a, b) => a - b);
    for (const from of at) expect(at.filter((t) => t >= from && t < from + 60_000).length).toBeLessThanOrEqual(RATE_PER_MINUTE + 1);
    expect(at.at(-1)! - started).toBeGreaterThanOrEqual(spreadMs - 2_000);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    // No lane channel closed (a consumer timeout closes one), and the waits went through the delay path.
    const metrics = await (await fetch(`http://127.0.0.1:${worker.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/^callback_relay_lane_channels_closed_total 0$/m);
    expect(Number(/^callback_relay_moves_total\{kind="limited"\} (\d+)/m.exec(metrics)?.[1] ?? 0)).toBeGreaterThan(0);
  },
  300_000,
);
