import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import amqplib from 'amqplib';
import { topologyNames } from '../../src/topology/topology-names.js';
import type { BenchContext, Scenario } from '../context.js';
import { scrapeMetric, sleep, spawnRelayWorker, type BenchChild } from '../processes.js';
import { benchPublisher, publishAll } from '../publish.js';
import { freePort, withScope, type Scope } from '../scope.js';
import { fmt, percentile } from '../stats.js';

/** The limits measured: the usual one, and a concurrency below the largest fleet's size (the rate then goes to the workers holding a slot). */
const SHAPES: ReadonlyArray<{ rate: number; concurrency: number; workers: number[] }> = [
  { rate: 50, concurrency: 5, workers: [1, 2, 4] },
  { rate: 20, concurrency: 3, workers: [4] },
];
const QUIET_TARGETS = 40;

interface Step {
  workers: number;
  rate: number;
  concurrency: number;
  backlog: number;
  /** Deliveries to the limited target per 1 s window, once its backlog is steady. */
  windows: number[];
  p50: number;
  max: number;
  mean: number;
  maxConcurrent: number;
  quietDelivered: number;
  quietExpected: number;
  quietMaxWaitMs: number;
  quietP99WaitMs: number;
  /** The same for quiet callbacks published once the limited backlog had left the lanes. */
  quietMaxWaitAfterMs: number;
  /** From the end of the backlog's publish until the lanes held none of it (it waits in P.slow and the workers). */
  lanesClearS: number;
  /** Requests to the limited target that were not a callback's first attempt, and callbacks in P.dead: what waiting cost. */
  laterAttempts: number;
  dead: number;
  overflowMoves: number;
  /** Requests to the limited target, and distinct callbacks among them (fewer: some callback was delivered twice). */
  limitedRequests: number;
  limitedDistinct: number;
  /** Lines the workers logged at warn or above, and workers that exited during the step. */
  workerProblems: number;
  workersExited: number;
}

/** A receiver that records when each request came and how many were open at once; answers 200 after `delayMs`. */
async function receiver(
  scope: Scope,
  delayMs: number,
  onRequest: (body: string, attempt: string | undefined) => void,
): Promise<{ origin: string; maxConcurrent: () => number }> {
  let open = 0;
  let most = 0;
  const server: Server = createServer((req, res) => {
    open += 1;
    most = Math.max(most, open);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      onRequest(Buffer.concat(chunks).toString(), req.headers['x-callback-attempt'] as string | undefined);
      setTimeout(() => {
        open -= 1;
        res.end('ok');
      }, delayMs);
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  scope.defer(async () => {
    server.closeAllConnections();
    server.close();
  });
  return { origin: `http://127.0.0.1:${(server.address() as { port: number }).port}`, maxConcurrent: () => most };
}

/**
 * One step: `workers` relay processes with TARGET_LIMITS_FILE limiting one target to `rate`/s and
 * `concurrency` at once; `backlog` callbacks to it are published at once, then, once they are queued,
 * QUIET_TARGETS other targets get one callback each every 500 ms for `measureS` seconds.
 */
async function limitsStep(
  ctx: BenchContext,
  { rate, concurrency }: { rate: number; concurrency: number },
  workers: number,
  backlog: number,
  measureS: number,
): Promise<Step> {
  return withScope(ctx.url, async (scope) => {
    const prefix = scope.prefix('limits');
    const limitedAt: number[] = [];
    let laterAttempts = 0;
    const paths = new Set<string>();
    const limited = await receiver(scope, 10, (body, attempt) => {
      limitedAt.push(Date.now());
      paths.add(body);
      if (attempt !== '1') laterAttempts += 1;
    });
    const waits: Array<{ sentAt: number; waitMs: number }> = [];
    const quiet = await Promise.all(
      Array.from({ length: QUIET_TARGETS }, () =>
        receiver(scope, 5, (body) => {
          const { sentAt } = JSON.parse(body) as { sentAt: number };
          waits.push({ sentAt, waitMs: Date.now() - sentAt });
        }),
      ),
    );
    const file = join(mkdtempSync(join(tmpdir(), 'bench-limits-')), 'limits.json');
    writeFileSync(file, JSON.stringify({ [limited.origin]: { rate: `${rate}/s`, concurrency } }));
    const ports: number[] = [];
    const children: BenchChild[] = [];
    for (let i = 0; i < workers; i += 1) {
      ports.push(await freePort());
      children.push(
        scope.add(
          spawnRelayWorker({ AMQP_URL: ctx.url, TOPOLOGY_PREFIX: prefix, METRICS_PORT: String(ports[i]), TARGET_LIMITS_FILE: file }),
        ),
      );
    }
    await Promise.all(children.map((child) => child.ready));
    // Every worker has heard the others (heartbeats every second) before the backlog arrives.
    await sleep(2_000);
    const { publisher } = benchPublisher(ctx.url, prefix);
    scope.add(publisher);
    await publishAll(publisher, backlog, (i) => ({ callback: { url: `${limited.origin}/cb/${i}`, body: { i } } }), 500);
    const published = Date.now();
    // Steady once the backlog has left the lanes (it waits in P.slow and the workers): measured from 1 s later.
    let clearAt: number | undefined;
    let settled = false;
    void watchLanes(ctx.url, prefix).then((at) => ((clearAt = at), (settled = true)));
    const steadyFrom = (): number => (clearAt ?? Date.now()) + 1_000;
    let quietExpected = 0;
    while (!settled || Date.now() < steadyFrom() + measureS * 1_000) {
      await Promise.all(quiet.map((target, i) => publisher.publish({ url: `${target.origin}/q/${i}`, body: { sentAt: Date.now() } })));
      quietExpected += quiet.length;
      await sleep(500);
    }
    // The last quiet callbacks get their 2 s.
    await sleep(2_000);
    const windows: number[] = [];
    const end = steadyFrom() + measureS * 1_000;
    for (let from = steadyFrom(); from + 1_000 <= end; from += 1_000)
      windows.push(limitedAt.filter((at) => at >= from && at < from + 1_000).length);
    const connection = await amqplib.connect(ctx.url);
    const dead = await connection
      .createChannel()
      .then(async (channel) => (await channel.checkQueue(`${prefix}.dead`)).messageCount)
      .finally(() => connection.close());
    // What the workers logged at warn or error, and whether any exited: a step with either is suspect.
    const exited = await Promise.all(children.map((child) => Promise.race([child.exited.then(() => true), sleep(10).then(() => false)])));
    const problems = children.flatMap((child) =>
      child
        .output()
        .split('\n')
        .filter((line) => /"level":(40|50|60)/.test(line)),
    );
    for (const line of problems.slice(0, 10)) ctx.log(`limits: worker said: ${line.slice(0, 300)}`);
    if (exited.some(Boolean)) ctx.log(`limits: ${exited.filter(Boolean).length} worker(s) exited during the step`);
    const overflowMoves = (
      await Promise.all(ports.map((port) => scrapeMetric(port, 'callback_relay_moves_total', { kind: 'overflow' })))
    ).reduce((a, b) => a + b, 0);
    return {
      workers,
      rate,
      concurrency,
      backlog,
      windows,
      p50: percentile(windows, 50),
      max: Math.max(...windows),
      mean: windows.reduce((a, b) => a + b, 0) / windows.length,
      maxConcurrent: limited.maxConcurrent(),
      quietDelivered: waits.length,
      quietExpected,
      quietMaxWaitMs: Math.max(...waits.map((w) => w.waitMs)),
      quietP99WaitMs: percentile(
        waits.map((w) => w.waitMs),
        99,
      ),
      quietMaxWaitAfterMs: Math.max(0, ...waits.filter((w) => clearAt !== undefined && w.sentAt >= clearAt).map((w) => w.waitMs)),
      lanesClearS: clearAt === undefined ? Number.NaN : (clearAt - published) / 1_000,
      laterAttempts,
      dead,
      overflowMoves,
      limitedRequests: limitedAt.length,
      limitedDistinct: paths.size,
      workerProblems: problems.length,
      workersExited: exited.filter(Boolean).length,
    };
  });
}

/** When the work lanes of `prefix` first hold fewer than 50 messages (polled every 200 ms for up to 60 s; undefined: never). */
async function watchLanes(url: string, prefix: string): Promise<number | undefined> {
  const connection = await amqplib.connect(url);
  try {
    const channel = await connection.createChannel();
    const lanes = topologyNames(prefix).workQueues;
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(200)) {
      let depth = 0;
      for (const lane of lanes) depth += (await channel.checkQueue(lane)).messageCount;
      if (depth < 50) return Date.now();
    }
    return undefined;
  } finally {
    await connection.close().catch(() => {});
  }
}

/**
 * A target limited in rate and concurrency (SHAPES) with a deep backlog, and QUIET_TARGETS quiet
 * targets, with 1, 2 and 4 workers: the rate the receiver sees (1 s windows), the most requests it had at
 * once, how long the quiet targets' callbacks waited, and what waiting for the limit cost.
 */
export const limits: Scenario = {
  name: 'limits',
  async run(ctx) {
    const backlog = ctx.quick ? 2_000 : 5_000;
    const measureS = ctx.quick ? 10 : 20;
    const steps: Step[] = [];
    for (const shape of SHAPES) {
      for (const workers of shape.workers) {
        const step = await limitsStep(ctx, shape, workers, backlog, measureS);
        ctx.log(
          `limits: ${shape.rate}/s, ${shape.concurrency} at once, ${workers} worker(s): p50 ${step.p50}/s, max ${step.max}/s, ${step.maxConcurrent} at once, quiet max wait ${step.quietMaxWaitMs} ms`,
        );
        steps.push(step);
      }
    }
    return {
      tables: [
        {
          title: `Limits: one target limited (TARGET_LIMITS_FILE) with ${backlog} queued, ${QUIET_TARGETS} quiet targets (one callback each per 500 ms), ${measureS} s measured, workers as processes`,
          headers: [
            'limit',
            'workers',
            'limited /s p50',
            'p50 ÷ rate',
            'max',
            'mean',
            'max at once',
            'backlog out of the lanes after s',
            'quiet delivered',
            'quiet max wait ms',
            'quiet p99 ms',
            'quiet max wait once out ms',
            'attempts spent waiting',
            'P.dead',
            'moved to P.slow',
          ],
          rows: steps.map((s) => [
            `${s.rate}/s, ${s.concurrency} at once`,
            String(s.workers),
            fmt(s.p50),
            fmt(s.p50 / s.rate, 2),
            fmt(s.max),
            fmt(s.mean, 1),
            String(s.maxConcurrent),
            fmt(s.lanesClearS, 1),
            `${s.quietDelivered}/${s.quietExpected}`,
            fmt(s.quietMaxWaitMs),
            fmt(s.quietP99WaitMs),
            fmt(s.quietMaxWaitAfterMs),
            String(s.laterAttempts),
            String(s.dead),
            String(s.overflowMoves),
          ]),
        },
      ],
      data: { shapes: SHAPES, quietTargets: QUIET_TARGETS, backlog, measureS, steps },
      notes: [
        'Rates are counted at the limited receiver in 1 s windows, from 1 s after the backlog had left the lanes (steady) for the measured time. "Attempts spent waiting" counts requests that were not a callback\'s first attempt (every answer is 200, so any would be a wasted attempt).',
        'The limited receiver answers after 10 ms, the quiet ones after 5 ms. Quiet wait: publish → request at the receiver; "once out": quiet callbacks published after the lanes held fewer than 50 messages (the limited backlog moved to P.slow).',
      ],
      charts: [
        {
          title: 'limited target rate ÷ its limit (p50 of 1 s windows)',
          unit: '×',
          target: 1,
          bars: steps.map((s) => ({ label: `${s.rate}/s ${s.concurrency} at once, ${s.workers} worker(s)`, value: s.p50 / s.rate })),
        },
      ],
    };
  },
};
