import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { createRegistry } from '../metrics/registry.js';

export interface IngestMetrics {
  registry: Registry;
  /** One answered request: its route (the pattern, never the raw URL) and status. */
  answered(route: string, status: number, seconds: number): void;
  /** Callbacks the broker confirmed. */
  accepted(count: number): void;
  /** A request cut before it was routed (timeout, malformed HTTP): no route, no duration. */
  cut(status: number): void;
  /** Request body bytes the replica holds now (INGEST_INFLIGHT_BYTES is the bound). */
  inflightBytes(bytes: number): void;
}

/** Prometheus metrics of an ingest replica; labels are small fixed sets (route patterns, status codes). */
export function createIngestMetrics(): IngestMetrics {
  const registry = createRegistry();
  const requests = new Counter({
    name: 'callback_relay_ingest_requests_total',
    help: 'HTTP requests answered, by route and status.',
    labelNames: ['route', 'status'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'callback_relay_ingest_request_duration_seconds',
    help: 'Time to answer, by route; for the callback routes it includes waiting for the broker confirm.',
    labelNames: ['route'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  const callbacks = new Counter({
    name: 'callback_relay_ingest_accepted_total',
    help: 'Callbacks accepted (confirmed by the broker).',
    registers: [registry],
  });
  const inflight = new Gauge({
    name: 'callback_relay_ingest_inflight_bytes',
    help: 'Request body bytes held now: read, parsed or being published (bound: INGEST_INFLIGHT_BYTES).',
    registers: [registry],
  });
  return {
    registry,
    answered(route, status, seconds) {
      requests.inc({ route, status: String(status) });
      duration.observe({ route }, seconds);
    },
    accepted: (count) => callbacks.inc(count),
    cut: (status) => requests.inc({ route: 'unrouted', status: String(status) }),
    inflightBytes: (bytes) => inflight.set(bytes),
  };
}
