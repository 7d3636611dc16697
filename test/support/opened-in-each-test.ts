import { afterEach } from 'vitest';
import type { RelayConfig } from '../../src/config/load-config.js';
import { startReceiver, type Answer, type ReceivedRequest, type Receiver } from './receiver.js';
import { startRelay, type RelayFixture } from './relay.js';
import { spawnWorker, type WorkerProcess } from './worker-process.js';

/**
 * Starts relays, receivers and worker processes for a test and closes them after it, newest first
 * (a worker still running is SIGKILLed). Call once per test file, at module level.
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
    worker(config: RelayConfig, extraEnv: Record<string, string> = {}): WorkerProcess {
      const worker = spawnWorker(config, extraEnv);
      open.push(async () => {
        if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
      });
      return worker;
    },
  };
}
