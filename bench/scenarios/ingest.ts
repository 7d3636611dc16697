import { Pool } from 'undici';
import type { BenchContext, Scenario } from '../context.js';
import { cpuSeconds, spawnIngest } from '../processes.js';
import { benchPublisher } from '../publish.js';
import { benchBody } from '../receiver.js';
import { freePort, withScope } from '../scope.js';
import { fmt, summarize, type Summary } from '../stats.js';

const TOKEN = 'bench-ingest-token-0123456789';
/** Callbacks under way at once, for the library and for the ingest alike. */
const CONCURRENCY = 200;
const CONNECTIONS = CONCURRENCY;
const BATCH = 100;

interface IngestRun {
  name: string;
  count: number;
  seconds: number;
  /** Accepted (confirmed) callbacks per second. */
  rate: number;
  /** Per call: one publish(), one POST or one batch POST, in ms. */
  latency: Summary;
  /** CPU of the ingest process per callback (the ingest runs only). */
  ingestCpuUsPerCallback?: number;
  /** CPU of the bench process per callback: the publisher (library run) or the HTTP client. */
  benchCpuUsPerCallback: number;
}

/** Runs `count / perCall` calls, `concurrency` at a time, timing each; `call(i)` handles callbacks i…i+perCall-1. */
async function drive(count: number, perCall: number, concurrency: number, call: (first: number) => Promise<void>): Promise<{ seconds: number; latencies: number[]; benchCpuUsPerCallback: number }> {
  const latencies: number[] = [];
  const cpuBefore = process.cpuUsage();
  let next = 0;
  const started = performance.now();
  const loop = async (): Promise<void> => {
    while (next < count) {
      const first = next;
      next += perCall;
      const t0 = performance.now();
      await call(first);
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.ceil(count / perCall)) }, loop));
  const cpu = process.cpuUsage(cpuBefore);
  return { seconds: (performance.now() - started) / 1000, latencies, benchCpuUsPerCallback: (cpu.user + cpu.system) / count };
}

const callbackFor = (i: number) => ({ url: `http://127.0.0.1:9/ingest/${i % 10}`, body: benchBody(i) });

/** The library's publish() in this process: the ceiling the ingest is measured against. */
async function libraryRun(ctx: BenchContext, count: number): Promise<IngestRun> {
  return withScope(ctx.url, async (scope) => {
    const { publisher } = benchPublisher(ctx.url, scope.prefix('ingest-lib'));
    scope.add(publisher);
    await publisher.publish(callbackFor(0));
    const { seconds, latencies, benchCpuUsPerCallback } = await drive(count, 1, CONCURRENCY, async (i) => void (await publisher.publish(callbackFor(i))));
    return { name: `library publish(), ${CONCURRENCY} at a time`, count, seconds, rate: count / seconds, latency: summarize(latencies), benchCpuUsPerCallback };
  });
}

/** One ingest process on a fresh prefix, driven over keep-alive by an undici Pool from this process. */
async function ingestRun(ctx: BenchContext, count: number, batch: boolean): Promise<IngestRun> {
  return withScope(ctx.url, async (scope) => {
    const port = await freePort();
    const ingest = scope.add(
      spawnIngest({ AMQP_URL: ctx.url, TOPOLOGY_PREFIX: scope.prefix('ingest'), INGEST_PORT: String(port), INGEST_TOKENS: TOKEN, METRICS_PORT: '0', PUBLISH_BUFFER_LIMIT: '5000', PUBLISH_TIMEOUT: '60s' }),
    );
    await ingest.ready;
    const pool = new Pool(`http://127.0.0.1:${port}`, { connections: CONNECTIONS, pipelining: 1 });
    scope.defer(() => pool.close());
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const send = async (path: string, payload: unknown): Promise<void> => {
      const res = await pool.request({ method: 'POST', path, headers, body: JSON.stringify(payload) });
      const text = await res.body.text();
      if (res.statusCode !== 202) throw new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
    };
    await send('/v1/callbacks', callbackFor(0));
    const cpuBefore = cpuSeconds(ingest.pid);
    const { seconds, latencies, benchCpuUsPerCallback } = batch
      ? await drive(count, BATCH, Math.max(2, CONCURRENCY / BATCH), (first) => send('/v1/callbacks:batch', { callbacks: Array.from({ length: BATCH }, (_, k) => callbackFor(first + k)) }))
      : await drive(count, 1, CONCURRENCY, (i) => send('/v1/callbacks', callbackFor(i)));
    const cpu = cpuSeconds(ingest.pid);
    return {
      name: batch ? `ingest, POST /v1/callbacks:batch of ${BATCH}, ${Math.max(2, CONCURRENCY / BATCH)} at a time` : `ingest, POST /v1/callbacks, ${CONCURRENCY} at a time on ${CONNECTIONS} keep-alive connections`,
      count,
      seconds,
      rate: count / seconds,
      latency: summarize(latencies),
      ingestCpuUsPerCallback: cpu !== undefined && cpuBefore !== undefined ? ((cpu - cpuBefore) * 1e6) / count : undefined,
      benchCpuUsPerCallback,
    };
  });
}

/**
 * Accepted callbacks per second through the HTTP ingest (a separate process, as deployed) against
 * the library's publish() on the same machine and broker, and the accept latency: from sending the
 * request to its 202, which comes only after the broker's confirm.
 */
export const ingest: Scenario = {
  name: 'ingest',
  async run(ctx) {
    const count = ctx.quick ? 5_000 : 30_000;
    const runs: IngestRun[] = [];
    for (const run of [() => libraryRun(ctx, count), () => ingestRun(ctx, count, false), () => ingestRun(ctx, count, true)]) {
      const done = await run();
      ctx.log(`ingest: ${done.name}: ${fmt(done.rate)}/s, p99 ${fmt(done.latency.p99, 1)} ms`);
      runs.push(done);
    }
    const [library, single, batch] = runs as [IngestRun, IngestRun, IngestRun];
    return {
      tables: [
        {
          title: `Ingest: ${count} callbacks (~300 B body), persistent, confirmed, quorum queues, ${ctx.broker.hasPlugin ? 'plugin' : 'queues'} mode`,
          headers: ['run', 's', 'accepted/s', '× library', 'p50 ms', 'p99 ms', 'p99.9 ms', 'ingest CPU µs/callback', 'client CPU µs/callback'],
          rows: runs.map((run) => [run.name, fmt(run.seconds, 1), fmt(run.rate), fmt(run.rate / library.rate, 2), fmt(run.latency.p50, 1), fmt(run.latency.p99, 1), fmt(run.latency.p999, 1), fmt(run.ingestCpuUsPerCallback), fmt(run.benchCpuUsPerCallback)]),
        },
      ],
      data: { count, concurrency: CONCURRENCY, connections: CONNECTIONS, batch: BATCH, runs },
      notes: [
        `Single POSTs reach ${fmt(single.rate / library.rate, 2)}× the library's rate (goal ≥ 0.7×); batches ${fmt(batch.rate / library.rate, 2)}×. Latency is per call: one publish(), one POST, or one batch POST of ${BATCH}.`,
        'The load generator, the ingest and the broker share the machine (2 cores); the library run has no HTTP hop and no second process. Client CPU: the bench process (the library run: the publisher itself; the ingest runs: the undici HTTP client).',
      ],
      charts: [
        { title: 'accepted callbacks per second', unit: '/s', bars: runs.map((run) => ({ label: run.name, value: run.rate })) },
        { title: 'p99 accept latency per call', unit: 'ms', bars: runs.map((run) => ({ label: run.name, value: run.latency.p99 })) },
      ],
    };
  },
};
