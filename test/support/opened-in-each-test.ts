import { afterEach } from 'vitest';
import { startReceiver, type Answer, type ReceivedRequest, type Receiver } from './receiver.js';
import { startRelay, type RelayFixture } from './relay.js';

/**
 * Starts relays and receivers for a test and closes them after it, newest first. Call once per
 * test file, at module level.
 */
export function openedInEachTest() {
  const open: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of open.splice(0).reverse()) await close();
  });
  return {
    async relay(env: Record<string, string> = {}): Promise<RelayFixture> {
      const relay = await startRelay(env);
      open.push(() => relay.cleanup());
      return relay;
    },
    async receiver(script: (request: ReceivedRequest) => Answer): Promise<Receiver> {
      const receiver = await startReceiver(script);
      open.push(() => receiver.close());
      return receiver;
    },
  };
}
