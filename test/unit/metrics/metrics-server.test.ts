import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import { startMetricsServer } from '../../../src/metrics/metrics-server.js';
import { configError } from '../../support/config-error.js';

let server: Server | undefined;
afterEach(async () => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

describe('the metrics listener', () => {
  it('listens on the address it is given, loopback by default (METRICS_HOST), and answers there', async () => {
    expect(loadConfig({}).metricsHost).toBe('127.0.0.1');
    server = await startMetricsServer(0, loadConfig({}).metricsHost, new Registry(), { ready: () => true });
    const { address, port } = server.address() as AddressInfo;
    expect(address).toBe('127.0.0.1');
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
  });

  it('METRICS_HOST and INGEST_HOST take IP addresses only, loopback by default', () => {
    expect(loadConfig({ METRICS_HOST: '0.0.0.0', INGEST_HOST: '::' })).toMatchObject({ metricsHost: '0.0.0.0', ingestHost: '::' });
    expect(loadConfig({}).ingestHost).toBe('127.0.0.1');
    expect(configError({ METRICS_HOST: 'localhost' }).message).toContain('METRICS_HOST (metricsHost): must be an IP address to listen on');
    expect(configError({ INGEST_HOST: 'every-interface' }).message).toContain('INGEST_HOST');
  });
});
