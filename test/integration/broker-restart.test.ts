import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { createWorker } from '../../src/consumer/worker.js';
import { createLogger } from '../../src/logger.js';
import { createPublisher } from '../../src/producer/publisher.js';
import { startTestBroker, type TestBroker } from '../support/broker.js';
import { describeEachMode, sleep } from '../support/modes.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { randomPrefix } from '../support/relay.js';

// A broker of its own: restarting the shared one would disturb nothing here (files run serially),
// but an external AMQP_URL broker must never be restarted by a test.
let broker: TestBroker | undefined;
let receiver: Receiver | undefined;
beforeAll(async () => {
  broker = await startTestBroker({ allowExternal: false }).catch(() => undefined);
  receiver = await startReceiver(() => ({ status: 200, delayMs: 20 }));
});
afterAll(async () => {
  await receiver?.close();
  await broker?.stop();
});

describeEachMode('broker restart', (mode) => {
  it('the worker reconnects after a broker restart and nothing is lost', async ({ skip }) => {
    if (!broker?.restart) return skip('no restartable broker (needs rabbitmq-server or a Docker engine)');
    const config = loadConfig({ AMQP_URL: broker.url, TOPOLOGY_PREFIX: randomPrefix(), DELAY_MODE: mode, LOG_LEVEL: 'silent', METRICS_PORT: '0', PREFETCH: '5', RETRY_SCHEDULE: '1s', PUBLISH_TIMEOUT: '90s', TARGET_ALLOW: '127.0.0.0/8' });
    const logger = createLogger(config.logLevel);
    const publisher = createPublisher(config, logger);
    const worker = createWorker(config, logger);
    await worker.start();
    const path = `/${config.topologyPrefix}`;
    try {
      const before = await Promise.all(Array.from({ length: 100 }, (_, i) => publisher.publish({ url: `${receiver!.origin}${path}/${i}`, body: i })));
      await receiver!.waitFor((r) => r.filter((x) => x.path.startsWith(path)).length >= 10);
      await broker.restart();
      const after = await Promise.all(Array.from({ length: 50 }, (_, i) => publisher.publish({ url: `${receiver!.origin}${path}/after-${i}`, body: i })));
      const ids = new Set([...before, ...after].map((r) => r.id));
      const seen = (): Set<string> => new Set(receiver!.requests.filter((x) => x.path.startsWith(path)).map((x) => String(x.headers['webhook-id'])));
      await receiver!.waitFor(() => seen().size === ids.size, 60_000);
      expect(seen()).toEqual(ids);
      await sleep(1_000);
    } finally {
      await worker.stop();
      await publisher.close();
    }
  });
});
