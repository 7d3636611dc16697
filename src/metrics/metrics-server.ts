import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';
import { metricNames, metricsText } from './registry.js';

export interface Probes {
  /** Connected to the broker and consuming. */
  ready(): boolean;
}

/**
 * `/metrics` (Prometheus; `?name=` picks metrics, see metricsText), `/healthz` (the process answers) and `/readyz` (connected and consuming),
 * on one small server for container probes and scraping, on `host` only (METRICS_HOST, loopback by
 * default: the metrics name targets and queues, which are nobody else's business).
 */
export async function startMetricsServer(port: number, host: string, registry: Registry, probes: Probes): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/metrics') {
      metricsText(registry, metricNames(req.url)).then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (error: Error) => res.writeHead(500).end(error.message),
      );
    } else if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    } else if (path === '/readyz') {
      const ready = probes.ready();
      res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' }).end(ready ? 'ready\n' : 'not ready\n');
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
