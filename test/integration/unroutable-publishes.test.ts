import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { declareOnce } from '../../src/topology/connect-topology.js';
import { laneBucket, laneRoutingKey } from '../../src/topology/topology-names.js';
import { pluginModeSkipReason, testModes, type TestMode } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import type { RelayFixture } from '../support/relay.js';

// An operator deleted a lane's binding. Every publish that can come back unroutable is mandatory: the
// broker returns it. A worker's copy then declares the topology again (as settle does) and is queued; a
// publisher, which declares nothing, rejects it with CR_ERR_PUBLISH_RETURNED naming the step.

const open = openedInEachTest();
const modes: TestMode[] = [
  ...(testModes().includes('queues') ? ['queues' as const] : []),
  ...(pluginModeSkipReason() === undefined ? ['plugin' as const] : []),
];

/** Removes the binding that takes callbacks for `origin` from exchange P into their lane. */
async function unbindLane(relay: RelayFixture, origin: string): Promise<void> {
  await relay.channel.unbindQueue(relay.names.workQueues[0] as string, relay.names.exchange, laneRoutingKey(laneBucket(origin)));
}

describe('publishes into a lane whose binding was deleted', () => {
  it.each(modes)(
    'the library publisher rejects the callback with CR_ERR_PUBLISH_RETURNED naming the step, and queues it once the topology is declared again [%s mode]',
    async (mode) => {
      const relay = await open.relay({ DELAY_MODE: mode });
      const origin = 'http://127.0.0.1:9';
      await relay.publisher.publish({ url: `${origin}/first`, body: 1 });
      await unbindLane(relay, origin);
      const returned = await relay.publisher.publish({ url: `${origin}/second`, body: 2 }).catch((error: unknown) => error);
      expect(returned).toMatchObject({ code: 'CR_ERR_PUBLISH_RETURNED' });
      expect((returned as Error).message).toContain('callback-relay topology');
      expect(await relay.messageCount(relay.names.workQueues[0] as string)).toBe(1);
      await declareOnce(relay.config, createLogger('silent'));
      await relay.publisher.publish({ url: `${origin}/second`, body: 2 });
      expect(await relay.messageCount(relay.names.workQueues[0] as string)).toBe(2);
    },
  );

  it.skipIf(pluginModeSkipReason() !== undefined)(
    'the P.due mover declares the topology again and delivers the callback [plugin mode]',
    async () => {
      const receiver = await open.receiver(() => ({ status: 204 }));
      const relay = await open.relay({ DELAY_MODE: 'plugin' });
      await relay.startWorker();
      // The delayed publish goes to P.due (not the lane), so only the mover's copy meets the missing binding.
      await unbindLane(relay, receiver.origin);
      await relay.publisher.publish({ url: `${receiver.origin}/later`, body: 1 }, { delay: 500 });
      await receiver.waitFor((requests) => requests.length === 1, 30_000);
      expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    },
  );
});
