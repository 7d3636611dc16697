import { createServer, type Server } from 'node:http';
import { loadConfig } from '../../src/config/load-config.js';
import { createWorker } from '../../src/consumer/worker.js';
import { createLogger } from '../../src/logger.js';
import { createPublisher } from '../../src/producer/publisher.js';
import { declareOnce } from '../../src/topology/connect-topology.js';
import type { BenchContext, Scenario } from '../context.js';
import { withScope } from '../scope.js';
import { fmt, percentile } from '../stats.js';

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

/** One run of the seed-002 scenario: `hanging` of `targets` never answer, callbacks spread evenly; in-process worker. */
export async function runIsolation(name: string, options: IsolationOptions, env: Record<string, string>): Promise<IsolationRun> {
  return withScope(options.url, async (scope) => {
    const latencies: number[] = [];
    let lastDelivered = 0;
    const targets = await startTargets(options.targets, options.hanging, (sentAt) => {
      lastDelivered = Date.now();
      latencies.push(lastDelivered - sentAt);
    });
    const prefix = scope.prefix('bench');
    scope.defer(async () => {
      for (const target of targets) {
        target.server.closeAllConnections();
        target.server.close();
      }
    });
    const config = loadConfig({
      AMQP_URL: options.url,
      TOPOLOGY_PREFIX: prefix,
      LOG_LEVEL: 'silent',
      METRICS_PORT: '0',
      HTTP_TIMEOUT: options.httpTimeout,
      TARGET_ALLOW: '127.0.0.0/8',
      ...env,
    });
    const logger = createLogger('silent');
    const worker = scope.add(createWorker(config, logger));
    // Publishers declare nothing: the topology step first, as a deployment runs it.
    await declareOnce(config, logger);
    const publisher = scope.add(createPublisher(config, logger));
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
    const seconds = (end - started) / 1000;
    return {
      name,
      throughput: latencies.length / seconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      delivered: latencies.length,
      expected,
      seconds,
      cutOff,
    };
  });
}

/** 20 targets of which 2 hang: healthy-target throughput and latency with isolation on and off, against a fault-free run. */
export const isolation: Scenario = {
  name: 'isolation',
  async run(ctx: BenchContext) {
    const options = {
      url: ctx.url,
      callbacks: ctx.quick ? 2_000 : 20_000,
      targets: 20,
      httpTimeout: ctx.quick ? '5s' : '10s',
      timeLimitMs: ctx.quick ? 30_000 : 120_000,
    };
    const step = async (name: string, hanging: number, env: Record<string, string>): Promise<IsolationRun> => {
      const run = await runIsolation(name, { ...options, hanging }, env);
      ctx.log(`isolation: ${name}: ${fmt(run.throughput)}/s${run.cutOff ? ' (cut off)' : ''}`);
      return run;
    };
    const base = await step('fault-free', 0, {});
    const runs = [base, await step('2 hanging, isolation on', 2, {}), await step('2 hanging, isolation off', 2, { ISOLATION: 'off' })];
    return {
      tables: [
        {
          title: `Isolation: ${options.targets} targets, ${options.callbacks} callbacks, HTTP_TIMEOUT ${options.httpTimeout}, PREFETCH 100`,
          headers: ['run', 'healthy delivered', 'healthy throughput /s', '×fault-free', 'p50 ms', '×fault-free', 'p99 ms', '×fault-free'],
          rows: runs.map((run) => [
            run.name,
            `${run.delivered}/${run.expected}${run.cutOff ? ` (cut off at ${fmt(run.seconds)} s)` : ''}`,
            fmt(run.throughput),
            fmt(run.throughput / base.throughput, 2),
            fmt(run.p50),
            fmt(run.p50 / base.p50, 2),
            fmt(run.p99),
            fmt(run.p99 / base.p99, 2),
          ]),
        },
      ],
      data: { options: { ...options, url: undefined }, runs },
      notes: [
        'In-process worker and publisher (publishing concurrently, 200 at a time); healthy targets answer after 5 ms, hanging ones never. Throughput: first publish → last healthy first-attempt delivery.',
      ],
      charts: [
        {
          title: 'healthy-target throughput vs fault-free',
          unit: '×',
          bars: runs.map((run) => ({ label: run.name, value: run.throughput / base.throughput })),
        },
      ],
    };
  },
};
