import { copyFileSync, mkdtempSync, readdirSync } from 'node:fs';
import { topologyNames } from '../src/topology/topology-names.js';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import amqplib from 'amqplib';
import { encodeCallback } from '../src/producer/encode-callback.js';
import type { BenchContext } from './context.js';
import {
  cpuSeconds,
  deferredCount,
  overflowCount,
  rssMb,
  sleep,
  spawnBenchScript,
  spawnRelayWorker,
  type BenchChild,
} from './processes.js';
import type { CallbackPublisher } from '../src/producer/publisher.js';
import { benchPublisher, publishAll, type PublishReport } from './publish.js';
import { benchBody, type BenchReceiver } from './receiver.js';
import { summarizeProfile, type ProfileSummary } from './profile-summary.js';
import { RESULTS_DIR } from './results.js';
import { freePort, withScope } from './scope.js';
import { summarize, type Summary } from './stats.js';
import { randomPrefix } from './topology-cleanup.js';

/** One consumer draining a pre-filled queue. */
export interface ConsumerRun {
  name: string;
  delivered: number;
  expected: number;
  /** First delivery → last delivery. */
  seconds: number;
  rate: number;
  /** publish → delivered (ms); with a pre-filled queue this is mostly time spent waiting in the queue. */
  latency: Summary;
  /** Rate of the pre-fill (confirmed publishes per second). */
  publishRate: number;
  /** CPU time of the consumer process per callback, µs (user + system, from /proc). */
  cpuUsPerCallback: number | undefined;
  rssMb: number | undefined;
  /** CPU time of the broker (beam.smp) per callback during the run, µs, when the broker is local. */
  brokerCpuUsPerCallback: number | undefined;
  /** Relay only: callbacks deferred because their target's circuit was open. */
  deferred?: number;
  /** Relay only: callbacks moved to P.slow because their target looked busy. */
  overflowed?: number;
  /** When profiled: the `.cpuprofile` (copied to bench/results/) and where the time went. */
  profile?: { file: string; summary: ProfileSummary };
  /** Seconds spent waiting, after the pre-fill, for the broker to go quiet (see settleBroker). */
  settleSeconds?: number;
}

/**
 * Waits until the local broker's VM uses under a tenth of a core over two 0.5 s windows in a row
 * (at most `maxMs`). A quorum queue keeps writing its log and segment files for seconds after a
 * burst of publishes or a queue deletion; a run started in that wake pays for the previous run's
 * work, which made whichever row came first after the pre-fill look slower than the same code later.
 * Without the VM's pid (a container, AMQP_URL) it waits a fixed 2 s.
 */
export async function settleBroker(ctx: BenchContext, maxMs = 30_000): Promise<number> {
  const started = performance.now();
  const pid = ctx.broker.beamPid;
  if (pid === undefined) {
    await sleep(2_000);
    return 2;
  }
  let quietWindows = 0;
  while (quietWindows < 2 && performance.now() - started < maxMs) {
    const before = cpuSeconds(pid);
    await sleep(500);
    const after = cpuSeconds(pid);
    quietWindows = before !== undefined && after !== undefined && after - before < 0.05 ? quietWindows + 1 : 0;
  }
  return (performance.now() - started) / 1000;
}

const timeoutFor = (count: number): number => 60_000 + count * 5;

/**
 * Ceiling (a): raw AMQP. Confirm-publishes `count` messages (the same bytes the library would publish,
 * persistent) to a quorum queue, then a child process consumes and acks them with PREFETCH 100.
 */
export async function rawCeiling(ctx: BenchContext, receiver: BenchReceiver, count: number): Promise<ConsumerRun> {
  return withScope(ctx.url, async (scope) => {
    const queue = `${randomPrefix('raw')}.raw`;
    const connection = await amqplib.connect(ctx.url);
    scope.defer(() => connection.close());
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    scope.defer(() => channel.deleteQueue(queue));
    const started = performance.now();
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < count) {
        const i = next++;
        const { id, content } = encodeCallback({ url: receiver.urlFor(i), body: benchBody(i) }, 1 << 20);
        const options = { persistent: true, contentType: 'application/json', messageId: id, timestamp: Math.floor(Date.now() / 1000) };
        await new Promise<void>((resolve, reject) =>
          channel.publish('', queue, content, options, (error) => (error ? reject(error) : resolve())),
        );
      }
    };
    await Promise.all(Array.from({ length: 200 }, lane));
    const publishRate = count / ((performance.now() - started) / 1000);
    const settleSeconds = await settleBroker(ctx);
    const child = scope.add(spawnBenchScript('raw-consumer', { AMQP_URL: ctx.url, QUEUE: queue, PREFETCH: '100', EXPECT: String(count) }));
    await child.ready;
    const cpuBefore = cpuSeconds(child.pid);
    const brokerBefore = beamCpu(ctx);
    const deadline = Date.now() + timeoutFor(count);
    while (!child.output().includes('result ') && Date.now() < deadline) await sleep(20);
    const line = child
      .output()
      .split('\n')
      .find((l) => l.startsWith('result '));
    if (!line) throw new Error(`raw consumer did not finish within ${timeoutFor(count)} ms`);
    const result = JSON.parse(line.slice('result '.length)) as { firstAt: number; lastAt: number; latency: Summary };
    const seconds = (result.lastAt - result.firstAt) / 1000;
    const cpu = usPerCallback(child.pid, cpuBefore, count);
    const brokerCpu = usPerCallback(ctx.broker.beamPid, brokerBefore, count);
    return {
      name: 'ceiling (a): raw AMQP, no HTTP',
      delivered: count,
      expected: count,
      seconds,
      rate: count / seconds,
      latency: result.latency,
      publishRate,
      cpuUsPerCallback: cpu,
      rssMb: rssMb(child.pid),
      brokerCpuUsPerCallback: brokerCpu,
      settleSeconds,
    };
  });
}

export interface HttpRunOptions {
  name: string;
  count: number;
  kind: 'minimal' | 'relay';
  /** Extra env of the relay worker. */
  env?: Record<string, string>;
  /** Callbacks go to this many of the receiver's origins (targets), round-robin. */
  targets?: number;
  /** Run the worker under `node --cpu-prof`. */
  profile?: boolean;
  /** Bind a queue to P.events (`#`) and consume it here, so every outcome event is routed and delivered. */
  listenToEvents?: boolean;
  /** Pre-fills with these publishes instead of `count` callbacks round-robin over the targets; the run still waits for `count` deliveries. */
  fill?: (publisher: CallbackPublisher) => Promise<PublishReport>;
}

/**
 * Pre-fills P.work with `count` callbacks through the library's publisher (200 unconfirmed at a time),
 * then starts the consumer as its own process and measures first → last delivery at the receiver.
 */
export async function httpRun(ctx: BenchContext, receiver: BenchReceiver, options: HttpRunOptions): Promise<ConsumerRun> {
  const { count, kind } = options;
  const targets = options.targets ?? receiver.origins.length;
  return withScope(ctx.url, async (scope) => {
    const prefix = scope.prefix('tp');
    const { publisher } = benchPublisher(ctx.url, prefix);
    scope.add(publisher);
    receiver.reset('ok');
    const published = options.fill
      ? await options.fill(publisher)
      : await publishAll(publisher, count, (i) => ({ callback: { url: receiver.urlFor(i, targets), body: benchBody(i) } }));
    await publisher.close();
    const settleSeconds = await settleBroker(ctx);
    const events = options.listenToEvents ? await listenToEvents(ctx.url, `${prefix}.events`) : undefined;
    if (events) scope.defer(events.close);
    const profileDir = options.profile ? mkdtempSync(join(tmpdir(), 'relay-prof-')) : undefined;
    if (profileDir) scope.defer(() => rm(profileDir, { recursive: true, force: true }));
    const metricsPort = await freePort();
    const child: BenchChild =
      kind === 'relay'
        ? spawnRelayWorker(
            { AMQP_URL: ctx.url, TOPOLOGY_PREFIX: prefix, METRICS_PORT: String(metricsPort), ...options.env },
            profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
          )
        : spawnBenchScript('minimal-consumer', { AMQP_URL: ctx.url, QUEUES: topologyNames(prefix).workQueues.join(','), PREFETCH: '100' });
    scope.add(child);
    await child.ready;
    const cpuBefore = cpuSeconds(child.pid);
    const brokerBefore = beamCpu(ctx);
    await receiver.waitForDelivered(count, timeoutFor(count));
    const cpu = usPerCallback(child.pid, cpuBefore, receiver.delivered);
    const brokerCpu = usPerCallback(ctx.broker.beamPid, brokerBefore, receiver.delivered);
    const rss = rssMb(child.pid);
    const deferred = kind === 'relay' ? await deferredCount(metricsPort) : undefined;
    const overflowed = kind === 'relay' ? await overflowCount(metricsPort) : undefined;
    await child.stop();
    const seconds = (receiver.lastAt - receiver.firstAt) / 1000;
    const written = profileDir ? readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile')) : undefined;
    let profile: ConsumerRun['profile'];
    if (profileDir && written) {
      const file = join(RESULTS_DIR, 'relay-worker.cpuprofile');
      copyFileSync(join(profileDir, written), file);
      profile = { file, summary: summarizeProfile(file, 20) };
    }
    return {
      name: options.name,
      delivered: receiver.delivered,
      expected: count,
      seconds,
      rate: receiver.delivered / seconds,
      latency: summarize(receiver.latencies),
      publishRate: published.rate,
      cpuUsPerCallback: cpu,
      rssMb: rss,
      brokerCpuUsPerCallback: brokerCpu,
      ...(deferred === undefined ? {} : { deferred }),
      ...(overflowed === undefined ? {} : { overflowed }),
      ...(profile ? { profile } : {}),
      settleSeconds,
    };
  });
}

/** An exclusive queue bound to the events exchange with `#`, consumed without acks: a listener for every event. */
async function listenToEvents(url: string, exchange: string): Promise<{ close(): Promise<void> }> {
  const connection = await amqplib.connect(url);
  const channel = await connection.createChannel();
  const { queue } = await channel.assertQueue('', { exclusive: true });
  await channel.bindQueue(queue, exchange, '#');
  await channel.consume(queue, () => {}, { noAck: true });
  return { close: () => connection.close() };
}

/** CPU seconds the broker's VM has used so far; undefined where its process cannot be read (a remote broker). */
export const beamCpu = (ctx: BenchContext): number | undefined =>
  ctx.broker.beamPid === undefined ? undefined : cpuSeconds(ctx.broker.beamPid);

function usPerCallback(pid: number | undefined, cpuBefore: number | undefined, count: number): number | undefined {
  const cpuAfter = pid === undefined ? undefined : cpuSeconds(pid);
  return cpuBefore === undefined || cpuAfter === undefined || count === 0 ? undefined : ((cpuAfter - cpuBefore) * 1e6) / count;
}
