import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RelayConfig } from '../config/load-config.js';
import type { Logger } from '../logger.js';
import { startMetricsServer } from '../metrics/metrics-server.js';
import { listenOrigin } from '../http/listen-origin.js';
import { createPublisher } from '../producer/publisher.js';
import { buildIngestServer, type IngestServer } from './ingest-server.js';
import { ingestOptions } from './ingest-options.js';

export interface RunningIngest {
  /** e.g. http://127.0.0.1:8080 */
  origin: string;
  server: IngestServer;
  /** The port of `/metrics` when INGEST_METRICS_PORT gives it a listener of its own. */
  metricsPort: number | undefined;
  /** Marks it unready, stops taking requests, lets those under way finish, then closes the publisher. */
  close(): Promise<void>;
}

/**
 * Starts an ingest replica: its own publisher (which checks that the topology exists) and the HTTP server on
 * INGEST_HOST:INGEST_PORT (`port` overrides it; 0 picks a free one). Throws `CR_ERR_CONFIG` without a token, or
 * with INGEST_INFLIGHT_BYTES below the largest request body.
 */
export async function startIngest(config: RelayConfig, logger: Logger, port = config.ingestPort): Promise<RunningIngest> {
  const options = ingestOptions(config);
  const publisher = createPublisher(config, logger);
  const server = buildIngestServer(options, { publisher, logger });
  let draining = false;
  let metricsServer: Server | undefined;
  try {
    await server.app.listen({ port, host: config.ingestHost });
    if (config.ingestMetricsPort > 0) {
      metricsServer = await startMetricsServer(config.ingestMetricsPort, config.metricsHost, server.metrics.registry, {
        ready: () => !draining && publisher.connected(),
      });
      const metricsAt = metricsServer.address() as AddressInfo;
      logger.info({ host: metricsAt.address, port: metricsAt.port }, 'ingest metrics listening');
    }
  } catch (error) {
    await server.app.close();
    await publisher.close();
    throw error;
  }
  const { address, port: bound } = server.app.server.address() as AddressInfo;
  logger.info({ host: address, port: bound }, 'ingest listening');
  return {
    origin: listenOrigin(address, bound),
    server,
    metricsPort: (metricsServer?.address() as AddressInfo | undefined)?.port,
    async close() {
      draining = true;
      server.drain();
      await server.app.close();
      await new Promise<void>((resolve) => (metricsServer ? metricsServer.close(() => resolve()) : resolve()));
      await publisher.close();
    },
  };
}
