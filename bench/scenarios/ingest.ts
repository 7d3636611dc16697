import { copyFileSync, mkdtempSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import type { BenchContext, Scenario, Table } from '../context.js';
import { cpuSeconds, spawnIngest } from '../processes.js';
import { summarizeProfile, type ProfileSummary } from '../profile-summary.js';
import { benchPublisher } from '../publish.js';
import { benchBody } from '../receiver.js';
import { RESULTS_DIR } from '../results.js';
import { freePort, withScope, type Scope } from '../scope.js';
import { fmt, percentile, summarize, type Summary } from '../stats.js';
import { postRequest, runLoad } from './ingest-load.js';

const TOKEN = 'bench-ingest-token-0123456789';
/** Callbacks under way at once, for the library and for the ingest alike: enough to cover the confirm round trip. */
const CONCURRENCY = 200;
const BATCH = 100;
const BATCHES_AT_ONCE = CONCURRENCY / BATCH;

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
  /** CPU of the bench process per callback: the publisher (library run) or the load generator. */
  benchCpuUsPerCallback: number;
  /** CPU of the broker per callback, when it runs on this machine. */
  brokerCpuUsPerCallback?: number;
  profile?: { file: string; summary: ProfileSummary };
}

const callbackFor = (i: number) => ({ url: `http://127.0.0.1:9/ingest/${i % 10}`, body: benchBody(i) });

const brokerCpu = (ctx: BenchContext): number | undefined => (ctx.broker.beamPid === undefined ? undefined : cpuSeconds(ctx.broker.beamPid));
const perCallback = (before: number | undefined, after: number | undefined, count: number): number | undefined =>
  before === undefined || after === undefined ? undefined : ((after - before) * 1e6) / count;

/** Runs `count / perCall` calls, `concurrency` at a time, timing each; `call(i)` handles callbacks i…i+perCall-1. */
async function drive(count: number, perCall: number, concurrency: number, call: (first: number) => Promise<void>): Promise<{ seconds: number; latencies: number[]; cpuUs: number }> {
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
  return { seconds: (performance.now() - started) / 1000, latencies, cpuUs: cpu.user + cpu.system };
}

/** The library's publish() in this process: the ceiling the ingest is measured against. */
async function libraryRun(ctx: BenchContext, count: number, warmup: number): Promise<IngestRun> {
  return withScope(ctx.url, async (scope) => {
    const { publisher } = benchPublisher(ctx.url, scope.prefix('ingest-lib'));
    scope.add(publisher);
    const publish = async (i: number): Promise<void> => void (await publisher.publish(callbackFor(i)));
    await drive(warmup, 1, CONCURRENCY, publish);
    const broker = brokerCpu(ctx);
    const { seconds, latencies, cpuUs } = await drive(count, 1, CONCURRENCY, publish);
    return {
      name: `library publish(), ${CONCURRENCY} at a time`,
      count,
      seconds,
      rate: count / seconds,
      latency: summarize(latencies),
      benchCpuUsPerCallback: cpuUs / count,
      brokerCpuUsPerCallback: perCallback(broker, brokerCpu(ctx), count),
    };
  });
}

type Client = 'lean' | 'undici';

/** An ingest process on a fresh prefix, under `node --cpu-prof` when `profileDir` is given. */
async function startIngestProcess(ctx: BenchContext, scope: Scope, profileDir: string | undefined) {
  const port = await freePort();
  const env = { AMQP_URL: ctx.url, TOPOLOGY_PREFIX: scope.prefix('ingest'), INGEST_PORT: String(port), INGEST_TOKENS: TOKEN, METRICS_PORT: '0', PUBLISH_BUFFER_LIMIT: '5000', PUBLISH_TIMEOUT: '60s' };
  const child = scope.add(spawnIngest(env, profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []));
  await child.ready;
  return { port, child };
}

/**
 * One ingest process driven over keep-alive from this process: `lean`, the prepared-bytes client
 * of ingest-load.ts (single POSTs on CONCURRENCY connections, or BATCHES_AT_ONCE batch POSTs), or
 * `undici`, a Pool's request() per POST, for comparison with a general-purpose client.
 */
async function ingestRun(ctx: BenchContext, count: number, warmup: number, options: { batch: boolean; client: Client; profile?: boolean }): Promise<IngestRun> {
  const { batch, client } = options;
  return withScope(ctx.url, async (scope) => {
    const profileDir = options.profile ? mkdtempSync(join(tmpdir(), 'relay-prof-')) : undefined;
    if (profileDir) scope.defer(() => rm(profileDir, { recursive: true, force: true }));
    const { port, child } = await startIngestProcess(ctx, scope, profileDir);
    const host = `127.0.0.1:${port}`;
    const path = batch ? '/v1/callbacks:batch' : '/v1/callbacks';
    const perCall = batch ? BATCH : 1;
    const payload = (first: number): unknown => (batch ? { callbacks: Array.from({ length: BATCH }, (_, k) => callbackFor(first + k)) } : callbackFor(first));
    let load: (offset: number, callbacks: number) => Promise<{ seconds: number; latencies: number[]; cpuUs: number }>;
    if (client === 'lean') {
      const headers = [`Authorization: Bearer ${TOKEN}`];
      load = async (offset, callbacks) => {
        const calls = Math.ceil(callbacks / perCall);
        const result = await runLoad({ port, connections: batch ? BATCHES_AT_ONCE : CONCURRENCY, count: calls, expectStatus: 202, request: (i) => postRequest(host, path, headers, JSON.stringify(payload(offset + i * perCall))) });
        return { seconds: result.seconds, latencies: result.latencies, cpuUs: result.cpuUsPerRequest * calls };
      };
    } else {
      const pool = new Pool(`http://${host}`, { connections: CONCURRENCY, pipelining: 1 });
      scope.defer(() => pool.close());
      const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
      const send = async (first: number): Promise<void> => {
        const res = await pool.request({ method: 'POST', path, headers, body: JSON.stringify(payload(first)) });
        const text = await res.body.text();
        if (res.statusCode !== 202) throw new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
      };
      load = (offset, callbacks) => drive(callbacks, perCall, batch ? BATCHES_AT_ONCE : CONCURRENCY, (first) => send(offset + first));
    }
    await load(0, warmup);
    const cpuBefore = cpuSeconds(child.pid);
    const broker = brokerCpu(ctx);
    const { seconds, latencies, cpuUs } = await load(warmup, count);
    const cpu = cpuSeconds(child.pid);
    const brokerAfter = brokerCpu(ctx);
    let profile: IngestRun['profile'];
    if (profileDir) {
      await child.stop();
      const written = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
      if (written) {
        const file = join(RESULTS_DIR, 'ingest.cpuprofile');
        copyFileSync(join(profileDir, written), file);
        profile = { file, summary: summarizeProfile(file, 20, /ingest\/envelope\.[jt]s$/) };
      }
    }
    const how = batch ? `POST /v1/callbacks:batch of ${BATCH}, ${BATCHES_AT_ONCE} at a time` : `POST /v1/callbacks, ${CONCURRENCY} keep-alive connections, 1 request each at a time`;
    return {
      name: `ingest, ${how}, ${client === 'lean' ? 'lean client' : 'undici Pool client'}${profileDir ? ', --cpu-prof' : ''}`,
      count,
      seconds,
      rate: count / seconds,
      latency: summarize(latencies),
      ingestCpuUsPerCallback: perCallback(cpuBefore, cpu, count),
      benchCpuUsPerCallback: cpuUs / count,
      brokerCpuUsPerCallback: perCallback(broker, brokerAfter, count),
      ...(profile ? { profile } : {}),
    };
  });
}

const median = (values: number[]): number => percentile(values, 50);

/**
 * Accepted callbacks per second through the HTTP ingest (a separate process, as deployed) against
 * the library's publish() on the same machine and broker, and the accept latency: from sending the
 * request to its 202, which comes only after the broker's confirm. Every run first sends a warm-up
 * (untimed) on its own connections and prefix, so that neither side is measured while V8 compiles.
 * On a shared machine the rate of either side swings from one run to the next, so the library and
 * the single-POST ingest run in alternating pairs, and the ratio is the median of the pairs' ratios.
 */
export const ingest: Scenario = {
  name: 'ingest',
  async run(ctx) {
    const count = ctx.quick ? 5_000 : 30_000;
    const warmup = ctx.quick ? 1_000 : 5_000;
    const rounds = ctx.quick ? 1 : 3;
    const runs: IngestRun[] = [];
    const step = async (plan: () => Promise<IngestRun>): Promise<IngestRun> => {
      const done = await plan();
      ctx.log(`ingest: ${done.name}: ${fmt(done.rate)}/s, p99 ${fmt(done.latency.p99, 1)} ms, ingest ${fmt(done.ingestCpuUsPerCallback)} µs, bench ${fmt(done.benchCpuUsPerCallback)} µs, broker ${fmt(done.brokerCpuUsPerCallback)} µs per callback`);
      runs.push(done);
      return done;
    };
    const pairs: Array<{ library: IngestRun; single: IngestRun }> = [];
    for (let round = 0; round < rounds; round += 1) {
      const library = await step(() => libraryRun(ctx, count, warmup));
      const single = await step(() => ingestRun(ctx, count, warmup, { batch: false, client: 'lean' }));
      pairs.push({ library, single });
    }
    const batch = await step(() => ingestRun(ctx, count, warmup, { batch: true, client: 'lean' }));
    const undici = await step(() => ingestRun(ctx, count, warmup, { batch: false, client: 'undici' }));
    if (ctx.options.profile) await step(() => ingestRun(ctx, count, warmup, { batch: false, client: 'lean', profile: true }));
    const ratios = pairs.map(({ library, single }) => single.rate / library.rate);
    const libraryRate = median(pairs.map(({ library }) => library.rate));
    const single = pairs.map(({ single }) => single);
    const cpu = (pick: (run: IngestRun) => number | undefined): number => median(single.map((run) => pick(run) ?? Number.NaN));
    const [ingestCpu, clientCpu, brokerCpuUs] = [cpu((run) => run.ingestCpuUsPerCallback), cpu((run) => run.benchCpuUsPerCallback), cpu((run) => run.brokerCpuUsPerCallback)];
    const tables: Table[] = [
      {
        title: `Ingest: ${count} callbacks (~300 B body) after ${warmup} of warm-up, persistent, confirmed, quorum queues, ${ctx.broker.hasPlugin ? 'plugin' : 'queues'} mode`,
        headers: ['run', 's', 'accepted/s', '× library', 'p50 ms', 'p99 ms', 'p99.9 ms', 'ingest CPU µs/callback', 'bench CPU µs/callback', 'broker CPU µs/callback'],
        rows: runs.map((run) => {
          const pair = pairs.find((each) => each.single === run);
          const isLibrary = pairs.some((each) => each.library === run);
          return [
            run.name,
            fmt(run.seconds, 1),
            fmt(run.rate),
            // A single POST run against the library run just before it; the others against the median library rate.
            isLibrary ? 'ref' : fmt(run.rate / (pair ? pair.library.rate : libraryRate), 2),
            fmt(run.latency.p50, 1),
            fmt(run.latency.p99, 1),
            fmt(run.latency.p999, 1),
            fmt(run.ingestCpuUsPerCallback),
            fmt(run.benchCpuUsPerCallback),
            fmt(run.brokerCpuUsPerCallback),
          ];
        }),
      },
    ];
    const profiled = runs.find((run) => run.profile)?.profile;
    const notes = [
      `Single POSTs reach ${fmt(median(ratios), 2)}× the library's rate (median of ${rounds} alternating pairs: ${ratios.map((ratio) => fmt(ratio, 2)).join(', ')}; goal ≥ 0.7×). Against the median library rate: batches ${fmt(batch.rate / libraryRate, 2)}×, single POSTs from undici's Pool ${fmt(undici.rate / libraryRate, 2)}×. Latency is per call: one publish(), one POST, or one batch POST of ${BATCH}.`,
      `CPU per accepted single POST (medians): ingest ${fmt(ingestCpu)} µs + load generator ${fmt(clientCpu)} µs + broker ${fmt(brokerCpuUs)} µs. The ingest is one thread: alone it could accept at most ~${fmt(1e6 / ingestCpu)}/s; all three together need ${fmt(ingestCpu + clientCpu + brokerCpuUs)} µs, at most ~${fmt((cpus().length * 1e6) / (ingestCpu + clientCpu + brokerCpuUs))}/s on this machine's ${cpus().length} cores if nothing else ran.`,
      'The load generator, the ingest and the broker share the machine; the library run has no HTTP hop and no second process. Bench CPU is the bench process: in the library run the publisher itself, in the ingest runs the HTTP client (the lean client: prepared request bytes, answers read by status line and Content-Length).',
    ];
    if (profiled) {
      const lines = (list: ProfileSummary['frames']): string[][] => list.map((line) => [line.name, fmt(line.ms), fmt(line.percent, 1)]);
      tables.push({ title: 'Profile of the ingest: self time by frame (after start-up, idle excluded)', headers: ['frame', 'ms', '% of busy'], rows: lines(profiled.summary.frames) });
      tables.push({ title: 'Profile of the ingest: self time by module', headers: ['module', 'ms', '% of busy'], rows: lines(profiled.summary.modules.slice(0, 12)) });
      notes.push(`CPU profile: ${profiled.file} (open in Chrome DevTools → Performance, or \`npx tsx bench/profile-summary.ts FILE\`).`);
    }
    return {
      tables,
      data: { count, warmup, rounds, concurrency: CONCURRENCY, batch: BATCH, ratios, runs },
      notes,
      charts: [
        { title: 'accepted callbacks per second', unit: '/s', bars: runs.map((run) => ({ label: run.name, value: run.rate })) },
        { title: 'p99 accept latency per call', unit: 'ms', bars: runs.map((run) => ({ label: run.name, value: run.latency.p99 })) },
      ],
    };
  },
};
