import { RelayError } from '../errors.js';
import type { ResolvedTopology } from '../topology/connect-topology.js';
import { applyTopology } from '../topology/declare-once.js';
import { withTimeout } from '../util/with-timeout.js';
import type { SettleContext } from './settle.js';

/**
 * What settle needs beyond the message: the confirm timeout (PUBLISH_TIMEOUT) and a way to declare
 * the topology again when a copy came back unroutable (an operator deleted P.dead, P.slow, a delay
 * level queue or a binding). The redeclare runs on a short-lived connection of its own, so a
 * conflicting declaration closes that connection, not the channel that settles; concurrent requests
 * share one run, and it gives up after the same timeout.
 */
export function settleOptions(topology: ResolvedTopology, confirmTimeoutMs: number): Pick<SettleContext, 'confirmTimeoutMs' | 'redeclare'> {
  let running: Promise<void> | undefined;
  const redeclare = (): Promise<void> => {
    running ??= withTimeout(applyTopology(topology.url, topology), confirmTimeoutMs, () =>
      new RelayError('CR_ERR_PUBLISH_TIMEOUT', `could not declare the topology again within ${confirmTimeoutMs} ms (PUBLISH_TIMEOUT)`),
    ).finally(() => (running = undefined));
    return running;
  };
  return { confirmTimeoutMs, redeclare };
}
