import { createServer, type Server } from 'node:http';
import { loadConfig } from '../src/config/load-config.js';
import { createWorker } from '../src/consumer/worker.js';
import { createLogger } from '../src/logger.js';
import { createPublisher } from '../src/producer/publisher.js';
import { randomPrefix, deleteTopologyAt } from './topology-cleanup.js';
import { percentile } from './stats.js';

export interface IsolationRun {
  name: string;
  /** Healthy-target deliveries per second, first publish → last healthy delivery. */
  throughput: number;
  p50: number;
  p99: number;
  delivered: number;
  expected: number;
  seconds: number;
  /** True when the run hit its time limit before every healthy callback arrived. */
  cutOff: boolean;
}

export interface IsolationOptions {
  url: string;
  callbacks: number;
  targets: number;
  hanging: number;
  httpTimeout: string;
  timeLimitMs: number;
}

interface Target {
  origin: string;
  server: Server;
}

/** A receiver per target: healthy ones answer after ~5 ms, hanging ones never answer (the client times out). */
async function startTargets(count: number, hanging: number, onDelivered: (sentAt: number) => void): Promise<Target[]> {
  const targets: Target[] = [];
  for (let i = 0; i < count; i += 1) {
    const hangs = i < hanging;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (hangs) return;
        setTimeout(() => {
          res.end('ok');
          if (req.headers['x-callback-attempt'] === '1') onDelivered(JSON.parse(Buffer.concat(chunks).toString()).sentAt);
        }, 5);
      });
    });
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    targets.push({ origin: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server });
  }
  return targets;
}

/** One run of the seed-002 scenario: `hanging` of `targets` never answer, callbacks spread evenly. */
export async function runIsolation(name: string, options: IsolationOptions, env: Record<string, string>): Promise<IsolationRun> {
  const latencies: number[] = [];
  let lastDelivered = 0;
  const targets = await startTargets(options.targets, options.hanging, (sentAt) => {
    lastDelivered = Date.now();
    latencies.push(lastDelivered - sentAt);
  });
  const config = loadConfig({ AMQP_URL: options.url, TOPOLOGY_PREFIX: randomPrefix('bench'), LOG_LEVEL: 'silent', METRICS_PORT: '0', HTTP_TIMEOUT: options.httpTimeout, ...env });
  const logger = createLogger('silent');
  const worker = createWorker(config, logger);
  const publisher = createPublisher(config, logger);
  await worker.start();
  const expected = Math.round((options.callbacks * (options.targets - options.hanging)) / options.targets);
  const started = Date.now();
  let next = 0;
  const publishOne = async (): Promise<void> => {
    while (next < options.callbacks && Date.now() - started < options.timeLimitMs) {
      const i = next++;
      const target = targets[i % targets.length] as Target;
      await publisher.publish({ url: `${target.origin}/cb/${i}`, body: { sentAt: Date.now(), i } });
    }
  };
  await Promise.all(Array.from({ length: 200 }, publishOne));
  while (latencies.length < expected && Date.now() - started < options.timeLimitMs) await new Promise((r) => setTimeout(r, 50));
  const cutOff = latencies.length < expected;
  const end = cutOff ? Date.now() : lastDelivered;
  await worker.stop();
  await publisher.close();
  for (const target of targets) {
    target.server.closeAllConnections();
    target.server.close();
  }
  await deleteTopologyAt(options.url, config.topologyPrefix);
  const seconds = (end - started) / 1000;
  return { name, throughput: latencies.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), delivered: latencies.length, expected, seconds, cutOff };
}
