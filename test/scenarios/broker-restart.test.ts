import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { createWorker } from '../../src/consumer/worker.js';
import { createLogger } from '../../src/logger.js';
import { createPublisher, type CallbackPublisher } from '../../src/producer/publisher.js';
import { NO_RESTART, restartableBroker, type RestartableBroker } from '../support/restartable-broker.js';
import { describeEachMode, sleep, type TestMode } from '../support/modes.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { randomPrefix } from '../support/relay.js';

// The harness's container when the run has one (the series under test: files run one after another, so
// restarting it disturbs no other test), else a broker of its own: never an external AMQP_URL broker.
let broker: RestartableBroker | undefined;
let receiver: Receiver | undefined;
beforeAll(async () => {
  broker = await restartableBroker();
  receiver = await startReceiver(() => ({ status: 200, delayMs: 20 }));
});
afterAll(async () => {
  await receiver?.close();
  await broker?.stop();
});

/**
 * A publisher and a worker of their own prefix on the restartable broker; `run` gets them and the
 * receiver path the test's callbacks use, and `seen()`, the webhook-ids that reached that path.
 */
// SLOW_THRESHOLD at HTTP_TIMEOUT: on a machine loaded by a restarting broker, answers that merely come
// late must not open the receiver's circuit; these tests are about the broker, not about isolation.
async function withRelay(
  mode: TestMode,
  settings: Record<string, string>,
  run: (relay: { publisher: CallbackPublisher; path: string; seen: () => Set<string> }) => Promise<void>,
): Promise<void> {
  const config = loadConfig({
    AMQP_URL: broker!.url,
    TOPOLOGY_PREFIX: randomPrefix(),
    DELAY_MODE: mode,
    LOG_LEVEL: 'silent',
    METRICS_PORT: '0',
    PUBLISH_TIMEOUT: '90s',
    TARGET_ALLOW: '127.0.0.0/8',
    SLOW_THRESHOLD: '10s',
    ...settings,
  });
  const logger = createLogger(config.logLevel);
  const publisher = createPublisher(config, logger);
  const worker = createWorker(config, logger);
  await worker.start();
  const path = `/${config.topologyPrefix}`;
  const seen = (): Set<string> =>
    new Set(receiver!.requests.filter((x) => x.path.startsWith(path)).map((x) => String(x.headers['webhook-id'])));
  try {
    await run({ publisher, path, seen });
  } finally {
    await worker.stop();
    await publisher.close();
  }
}

describeEachMode('broker restart', (mode) => {
  it('the worker reconnects after a broker restart and nothing is lost', async ({ skip }) => {
    if (!broker?.restart) return skip(NO_RESTART);
    await withRelay(mode, { PREFETCH: '5', RETRY_SCHEDULE: '1s' }, async ({ publisher, path, seen }) => {
      const before = await Promise.all(
        Array.from({ length: 100 }, (_, i) => publisher.publish({ url: `${receiver!.origin}${path}/${i}`, body: i })),
      );
      await receiver!.waitFor((r) => r.filter((x) => x.path.startsWith(path)).length >= 10);
      await broker!.restart!();
      const after = await Promise.all(
        Array.from({ length: 50 }, (_, i) => publisher.publish({ url: `${receiver!.origin}${path}/after-${i}`, body: i })),
      );
      const ids = new Set([...before, ...after].map((r) => r.id));
      await receiver!.waitFor(() => seen().size === ids.size, 60_000);
      expect(seen()).toEqual(ids);
      await sleep(1_000);
    });
  });

  // Plugin mode: the plugin fires every overdue message at once when the node starts, before quorum
  // queues have leaders; they must land somewhere that is up (P.due) rather than be dropped.
  it('callbacks that fall due while the broker is down are delivered once it is back', async ({ skip }) => {
    if (!broker?.restart) return skip(NO_RESTART);
    await withRelay(mode, {}, async ({ publisher, path, seen }) => {
      const deliverAt = new Date(Date.now() + 1_000);
      const published = await Promise.all(
        Array.from({ length: 30 }, (_, i) => publisher.publish({ url: `${receiver!.origin}${path}/due-${i}`, body: i }, { deliverAt })),
      );
      await broker!.restart!(); // takes longer than the 1 s delay: every callback is overdue when the node is back
      await receiver!.waitFor(() => seen().size === published.length, 60_000);
      expect(seen()).toEqual(new Set(published.map((r) => r.id)));
    });
  });
});
