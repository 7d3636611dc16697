import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { loadConfig } from '../../src/config/load-config.js';
import { createWorker } from '../../src/consumer/worker.js';
import { createLogger } from '../../src/logger.js';
import type { createPublisher } from '../../src/producer/publisher.js';
import { laneBucket, laneOf, topologyNames } from '../../src/topology/topology-names.js';
import type { BenchContext } from '../context.js';
import { freePort, Scope } from '../scope.js';
import { scrapeMetric, spawnBenchScript, spawnRelayWorker, type BenchChild } from '../processes.js';

/** How a target answers one request: a status after `delayMs`, or null: never (until the client gives up). */
export type Reply = { status: number; delayMs: number } | null;

/** A local receiver of the fairness scenario (bench/scenarios/fairness.ts, outage.ts, crowd.ts). */
export interface Target {
  origin: string;
  /** First time each path got a 2xx, ms since the epoch. */
  delivered: Map<string, number>;
  /** Requests that reached it (a refused connection is none). */
  requests: number;
  /** Stops listening and drops every open connection: connections are refused until `listen()`. */
  refuse(): Promise<void>;
  /** Listens again on the same port. */
  listen(): Promise<void>;
}

/** Starts a target on a loopback port; `answer` decides per request (`nth`: the how-manieth request for this path). */
export async function startTarget(scope: Scope, answer: (path: string, nth: number) => Reply): Promise<Target> {
  const seen = new Map<string, number>();
  let port = 0;
  const target: Target = {
    origin: '',
    delivered: new Map(),
    requests: 0,
    refuse: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
    listen: () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve)),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '/';
      const nth = (seen.get(path) ?? 0) + 1;
      seen.set(path, nth);
      target.requests += 1;
      const reply = answer(path, nth);
      if (!reply) return;
      setTimeout(() => {
        if (res.destroyed) return;
        res.writeHead(reply.status).end();
        if (reply.status < 300 && !target.delivered.has(path)) target.delivered.set(path, Date.now());
      }, reply.delayMs);
    });
  });
  server.keepAliveTimeout = 30_000;
  await target.listen();
  port = (server.address() as { port: number }).port;
  target.origin = `http://127.0.0.1:${port}`;
  scope.defer(async () => {
    server.closeAllConnections();
    server.close();
  });
  return target;
}

export const LANES = 8;
export const laneOfTarget = (target: Target): number => laneOf(laneBucket(target.origin), LANES);

/** A target in the same lane as `other` (or in another one): ports are random, so listen until it fits. */
export async function startTargetInLane(
  scope: Scope,
  other: Target,
  same: boolean,
  answer: Parameters<typeof startTarget>[1],
): Promise<Target> {
  for (;;) {
    const trial = new Scope(scope.url);
    const candidate = await startTarget(trial, answer);
    if ((laneOfTarget(candidate) === laneOfTarget(other)) === same) {
      scope.defer(() => trial.close());
      return candidate;
    }
    await trial.close();
  }
}

/** Relay workers in this process, or (`processes`) each its own compiled process as it ships; or the minimal consumer. */
export type Consumer = { kind: 'relay'; workers: number; env: Record<string, string>; processes?: boolean } | { kind: 'minimal' };

/**
 * Starts the consumers of a run (relay workers in this process, LANES 8 unless `env` says otherwise);
 * returns the metrics ports of the relay workers.
 */
/** `children`, when given, gets the worker processes (consumer.processes), for their output. */
export async function startConsumers(
  ctx: BenchContext,
  scope: Scope,
  prefix: string,
  consumer: Consumer,
  base: Record<string, string>,
  children?: BenchChild[],
): Promise<number[]> {
  if (consumer.kind === 'minimal') {
    const child = scope.add(
      spawnBenchScript('minimal-consumer', {
        AMQP_URL: ctx.url,
        QUEUES: topologyNames(prefix, LANES).workQueues.join(','),
        PREFETCH: base.PREFETCH ?? '50',
      }),
    );
    await child.ready;
    return [];
  }
  const ports: number[] = [];
  if (consumer.processes) {
    const env = { LANES: String(LANES), ...base, ...consumer.env, AMQP_URL: ctx.url, TOPOLOGY_PREFIX: prefix };
    for (let i = 0; i < consumer.workers; i += 1) ports.push(await freePort());
    const started = ports.map((port) => scope.add(spawnRelayWorker({ ...env, METRICS_PORT: String(port) })));
    children?.push(...started);
    await Promise.all(started.map((child) => child.ready));
    return ports;
  }
  for (let i = 0; i < consumer.workers; i += 1) {
    const port = await freePort();
    const config = loadConfig({
      AMQP_URL: ctx.url,
      TOPOLOGY_PREFIX: prefix,
      LOG_LEVEL: 'silent',
      METRICS_PORT: String(port),
      LANES: String(LANES),
      TARGET_POLICY: 'default',
      ...base,
      ...consumer.env,
    });
    const worker = scope.add(createWorker(config, createLogger('silent')));
    await worker.start();
    ports.push(port);
  }
  return ports;
}

/** The sum of a metric's samples over the workers' /metrics whose labels include every `labels` pair. */
export async function workerMetric(ports: number[], name: string, labels: Record<string, string> = {}): Promise<number> {
  let total = 0;
  for (const port of ports) total += await scrapeMetric(port, name, labels);
  return total;
}

/** Broker publishes by the workers so far (retry, dead-letter copies), read off their /metrics. */
export const workerPublishes = (ports: number[]): Promise<number> => workerMetric(ports, 'callback_relay_publish_confirm_seconds_count');

/** Publishes `count` callbacks to `target`, 500 at a time (the publisher's buffer holds PUBLISH_BUFFER_LIMIT). */
export async function publishTo(publisher: ReturnType<typeof createPublisher>, target: Target, tag: string, count: number): Promise<void> {
  for (let start = 0; start < count; start += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, count - start) }, (_, i) =>
        publisher.publish({ url: `${target.origin}/${tag}/${start + i}`, body: start + i }),
      ),
    );
  }
}

export const waitUntil = async (done: () => boolean, limitMs: number, started: number): Promise<boolean> => {
  while (!done() && Date.now() - started < limitMs) await new Promise((resolve) => setTimeout(resolve, 20));
  return done();
};

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
