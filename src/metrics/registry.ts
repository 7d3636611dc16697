import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * A registry of its own for one process role (worker, ingest), with Node's default process metrics
 * (CPU, memory, event-loop lag) collected into it: every role's /metrics reads the same way.
 */
export function createRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}
