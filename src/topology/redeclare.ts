import { RelayError } from '../errors.js';
import { withTimeout } from '../util/with-timeout.js';
import type { ResolvedTopology } from './connect-topology.js';
import { applyTopology } from './declare-once.js';

/**
 * Declares the whole topology again, for a publish the broker returned as unroutable (an operator
 * deleted a queue or a binding). It runs on a short-lived connection of its own, so a conflicting
 * declaration closes that connection, not the channel that publishes; concurrent requests share one
 * run, and it gives up after `timeoutMs` with `CR_ERR_PUBLISH_TIMEOUT`.
 */
export function createRedeclare(topology: ResolvedTopology, timeoutMs: number): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    running ??= withTimeout(applyTopology(topology.url, topology).then(() => {}), timeoutMs, () =>
      new RelayError('CR_ERR_PUBLISH_TIMEOUT', `could not declare the topology again within ${timeoutMs} ms (PUBLISH_TIMEOUT)`),
    ).finally(() => (running = undefined));
    return running;
  };
}
