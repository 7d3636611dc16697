import { describe, expect, it } from 'vitest';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { createWorker } from '../../src/consumer/worker.js';
import { createLogger } from '../../src/logger.js';
import type { Receiver } from '../support/receiver.js';
import type { RelayFixture } from '../support/relay.js';

let relay: RelayFixture | undefined;
let receiver: Receiver | undefined;
const open = openedInEachTest();

describe('queues mode delay levels', () => {
  it('any delay arrives on time to about a second, and a long delay never holds up a short one', async () => {
    receiver = await open.receiver(() => ({ status: 200 }));
    relay = await open.relay({ DELAY_MODE: 'queues' });
    await relay.startWorker();
    const delays = [7_000, 5_000, 3_000, 1_500, 1_000, 2_000, 6_300];
    const sentAt = new Map<string, number>();
    for (const delay of delays) {
      sentAt.set(`/d${delay}`, Date.now());
      await relay.publisher.publish({ url: `${receiver.origin}/d${delay}`, body: delay }, { delay });
    }
    await receiver.waitFor((r) => r.length === delays.length, 15_000);
    expect(receiver.requests.map((r) => r.path)).toEqual([...delays].sort((a, b) => a - b).map((d) => `/d${d}`));
    for (const request of receiver.requests) {
      const wanted = Math.round(Number(request.path.slice(2)) / 1_000) * 1_000;
      const waited = request.at - (sentAt.get(request.path) ?? 0);
      expect(Math.abs(waited - wanted), `${request.path} waited ${waited} ms`).toBeLessThan(1_000);
    }
  });

  it('declaring the topology again (a second worker, a reconnect) changes nothing', async () => {
    relay = await open.relay({ DELAY_MODE: 'queues' });
    await relay.startWorker();
    await relay.startWorker();
    expect(await relay.messageCount(relay.names.delayLevel(21))).toBe(0);
  });

  it('a prefix declared with other settings stops the worker at start with CR_ERR_TOPOLOGY', async () => {
    relay = await open.relay({ DELAY_MODE: 'queues' });
    await relay.startWorker();
    const other = createWorker({ ...relay.config, queueType: 'classic' }, createLogger('silent'));
    await expect(other.start()).rejects.toMatchObject({ code: 'CR_ERR_TOPOLOGY', message: expect.stringContaining(`prefix "${relay.config.topologyPrefix}"`) });
    await other.stop();
  });
});
