import type { ResolvedTopology } from '../topology/connect-topology.js';
import { createRedeclare } from '../topology/redeclare.js';
import type { SettleContext } from './settle.js';

/**
 * What settle needs beyond the message: the confirm timeout (PUBLISH_TIMEOUT) and a way to declare
 * the topology again when a copy came back unroutable (an operator deleted P.dead, P.slow, a delay
 * level queue or a binding): see topology/redeclare.ts.
 */
export function settleOptions(topology: ResolvedTopology, confirmTimeoutMs: number): Pick<SettleContext, 'confirmTimeoutMs' | 'redeclare'> {
  return { confirmTimeoutMs, redeclare: createRedeclare(topology, confirmTimeoutMs) };
}
