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

/**
 * The registry's text for a `/metrics` request: every metric, or only those named by its `name`
 * query parameters (`/metrics?name=callback_relay_moves_total&name=…`; a name it does not hold adds
 * nothing). Why: a whole scrape also computes Node's default metrics (the event-loop lag histogram's
 * percentiles, memory, open file descriptors), a cost a poller that wants one counter several times a
 * second should not put on a busy worker.
 */
export async function metricsText(registry: Registry, names: readonly string[] = []): Promise<string> {
  if (names.length === 0) return registry.metrics();
  const known = [...new Set(names)].filter((name) => registry.getSingleMetric(name) !== undefined);
  const texts = await Promise.all(known.map((name) => registry.getSingleMetricAsString(name)));
  return texts.map((text) => `${text}\n`).join('');
}

/** The `name` parameters of a request's URL (`/metrics?name=a&name=b`); none from one that does not parse (never a throw in a request handler). */
export function metricNames(url: string | undefined): string[] {
  if (!URL.canParse(url ?? '/', 'http://localhost')) return [];
  return new URL(url ?? '/', 'http://localhost').searchParams.getAll('name');
}
