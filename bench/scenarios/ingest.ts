import { copyFileSync, mkdtempSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import type { BenchContext, Scenario, Table } from '../context.js';
import { cpuSeconds, spawnIngest, spawnIngestFloor } from '../processes.js';
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
  /** CPU of each server process (ingest or floor) per callback of the run; none in the library run. */
  serverCpuUsPerCallback?: number[];
  /** CPU of the bench process per callback: the publisher (library run) or the load generator. */
  benchCpuUsPerCallback: number;
  /** CPU of the broker per callback, when it runs on this machine. */
  brokerCpuUsPerCallback?: number;
  profile?: { file: string; summary: ProfileSummary };
}

const callbackFor = (i: number) => ({ url: `http://127.0.0.1:9/ingest/${i % 10}`, body: benchBody(i) });

const brokerCpu = (ctx: BenchContext): number | undefined =>
  ctx.broker.beamPid === undefined ? undefined : cpuSeconds(ctx.broker.beamPid);
const perCallback = (before: number | undefined, after: number | undefined, count: number): number | undefined =>
  before === undefined || after === undefined ? undefined : ((after - before) * 1e6) / count;

/** Runs `count / perCall` calls, `concurrency` at a time, timing each; `call(i)` handles callbacks i…i+perCall-1. */
async function drive(
  count: number,
  perCall: number,
  concurrency: number,
  call: (first: number) => Promise<void>,
): Promise<{ seconds: number; latencies: number[]; cpuUs: number }> {
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
      name: 'library publish()',
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
/** `ingest`: the relay's ingest as deployed; `floor`: bench/scenarios/ingest-floor.ts, node:http and publish() only. */
type Server = 'ingest' | 'floor';

interface ServerRunOptions {
  server: Server;
  /** Processes sharing the connections (and one topology prefix), as replicas behind a balancer. */
  processes: number;
  batch: boolean;
  client: Client;
  profile?: boolean;
}

/** A server process on `prefix`, under `node --cpu-prof` when `profileDir` is given. */
async function startServer(ctx: BenchContext, scope: Scope, server: Server, prefix: string, profileDir: string | undefined) {
  const port = await freePort();
  const env = {
    AMQP_URL: ctx.url,
    TOPOLOGY_PREFIX: prefix,
    INGEST_PORT: String(port),
    INGEST_TOKENS: TOKEN,
    METRICS_PORT: '0',
    PUBLISH_BUFFER_LIMIT: '5000',
    PUBLISH_TIMEOUT: '60s',
  };
  const child = scope.add(
    server === 'floor' ? spawnIngestFloor(env) : spawnIngest(env, profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
  );
  await child.ready;
  return { port, child };
}

/**
 * Server processes on a fresh prefix driven over keep-alive from this process: `lean`, the
 * prepared-bytes client of ingest-load.ts (single POSTs on CONCURRENCY connections split evenly
 * between the processes, or BATCHES_AT_ONCE batch POSTs), or `undici`, a Pool's request() per POST,
 * for comparison with a general-purpose client.
 */
async function serverRun(ctx: BenchContext, count: number, warmup: number, options: ServerRunOptions): Promise<IngestRun> {
  const { batch, client } = options;
  return withScope(ctx.url, async (scope) => {
    const profileDir = options.profile ? mkdtempSync(join(tmpdir(), 'relay-prof-')) : undefined;
    if (profileDir) scope.defer(() => rm(profileDir, { recursive: true, force: true }));
    const prefix = scope.prefix('ingest');
    const servers = await Promise.all(
      Array.from({ length: options.processes }, () => startServer(ctx, scope, options.server, prefix, profileDir)),
    );
    const ports = servers.map(({ port }) => port);
    const host = `127.0.0.1:${ports[0]}`;
    const path = batch ? '/v1/callbacks:batch' : '/v1/callbacks';
    const perCall = batch ? BATCH : 1;
    const payload = (first: number): unknown =>
      batch ? { callbacks: Array.from({ length: BATCH }, (_, k) => callbackFor(first + k)) } : callbackFor(first);
    let load: (offset: number, callbacks: number) => Promise<{ seconds: number; latencies: number[]; cpuUs: number }>;
    if (client === 'lean') {
      const headers = [`Authorization: Bearer ${TOKEN}`];
      load = async (offset, callbacks) => {
        const calls = Math.ceil(callbacks / perCall);
        const result = await runLoad({
          ports,
          connections: batch ? BATCHES_AT_ONCE : CONCURRENCY,
          count: calls,
          expectStatus: 202,
          request: (i) => postRequest(host, path, headers, JSON.stringify(payload(offset + i * perCall))),
        });
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
    const cpuBefore = servers.map(({ child }) => cpuSeconds(child.pid));
    const broker = brokerCpu(ctx);
    const { seconds, latencies, cpuUs } = await load(warmup, count);
    const serverCpu = servers.map(({ child }, k) => perCallback(cpuBefore[k], cpuSeconds(child.pid), count));
    const brokerAfter = brokerCpu(ctx);
    let profile: IngestRun['profile'];
    if (profileDir) {
      await Promise.all(servers.map(({ child }) => child.stop()));
      const written = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
      if (written) {
        const file = join(RESULTS_DIR, 'ingest.cpuprofile');
        copyFileSync(join(profileDir, written), file);
        profile = { file, summary: summarizeProfile(file, 20, /ingest\/envelope\.[jt]s$/) };
      }
    }
    const what =
      options.server === 'floor' ? 'floor (bare node:http + publish())' : options.processes > 1 ? `ingest ×${options.processes}` : 'ingest';
    const how = [batch ? `batches of ${BATCH}` : '', client === 'undici' ? 'undici Pool client' : '', profileDir ? '--cpu-prof' : '']
      .filter(Boolean)
      .join(', ');
    return {
      name: how ? `${what}, ${how}` : what,
      count,
      seconds,
      rate: count / seconds,
      latency: summarize(latencies),
      serverCpuUsPerCallback: serverCpu.some((cpu) => cpu === undefined) ? undefined : (serverCpu as number[]),
      benchCpuUsPerCallback: cpuUs / count,
      brokerCpuUsPerCallback: perCallback(broker, brokerAfter, count),
      ...(profile ? { profile } : {}),
    };
  });
}

const median = (values: number[]): number => percentile(values, 50);
const sum = (values: number[] | undefined): number | undefined => (values === undefined ? undefined : values.reduce((a, b) => a + b, 0));

/** The rows run in every round, each compared with that round's library run. */
const KINDS = ['ingest', 'floor', 'double'] as const;
type Kind = (typeof KINDS)[number];
const PLANS: Record<Kind, ServerRunOptions> = {
  ingest: { server: 'ingest', processes: 1, batch: false, client: 'lean' },
  floor: { server: 'floor', processes: 1, batch: false, client: 'lean' },
  double: { server: 'ingest', processes: 2, batch: false, client: 'lean' },
};

/**
 * Accepted callbacks per second through the HTTP ingest (a separate process, as deployed) against
 * the library's publish() on the same machine and broker, and the accept latency: from sending the
 * request to its 202, which comes only after the broker's confirm. Two bounds run beside it: the
 * floor (the cheapest HTTP ingest Node allows: node:http, JSON.parse, publish()) and two ingest
 * processes sharing the connections. Every run first sends a warm-up (untimed) on its own
 * connections and prefix, so that neither side is measured while V8 compiles. On a shared machine
 * the rate of either side swings from one run to the next, so each round runs the library and then
 * each HTTP row, and a row's ratio is the median of its rounds' ratios.
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
      ctx.log(
        `ingest: ${done.name}: ${fmt(done.rate)}/s, p99 ${fmt(done.latency.p99, 1)} ms, server ${fmt(sum(done.serverCpuUsPerCallback))} µs, bench ${fmt(done.benchCpuUsPerCallback)} µs, broker ${fmt(done.brokerCpuUsPerCallback)} µs per callback`,
      );
      runs.push(done);
      return done;
    };
    const played: Array<{ library: IngestRun } & Record<Kind, IngestRun>> = [];
    for (let round = 0; round < rounds; round += 1) {
      const library = await step(() => libraryRun(ctx, count, warmup));
      const rows = {} as Record<Kind, IngestRun>;
      for (const kind of KINDS) rows[kind] = await step(() => serverRun(ctx, count, warmup, PLANS[kind]));
      played.push({ library, ...rows });
    }
    const batch = await step(() => serverRun(ctx, count, warmup, { ...PLANS.ingest, batch: true }));
    const undici = await step(() => serverRun(ctx, count, warmup, { ...PLANS.ingest, client: 'undici' }));
    if (ctx.options.profile) await step(() => serverRun(ctx, count, warmup, { ...PLANS.ingest, profile: true }));
    const libraryRate = median(played.map(({ library }) => library.rate));
    const ratioOf = (run: IngestRun): number => {
      const round = played.find((each) => KINDS.some((kind) => each[kind] === run));
      return run.rate / (round ? round.library.rate : libraryRate);
    };
    const medianOf = (kind: Kind | 'library', pick: (run: IngestRun) => number | undefined): number =>
      median(played.map((round) => pick(round[kind]) ?? Number.NaN));
    const ratios = Object.fromEntries(KINDS.map((kind) => [kind, played.map((round) => ratioOf(round[kind]))])) as Record<Kind, number[]>;
    const machine = (kind: Kind | 'library'): number =>
      medianOf(
        kind,
        (run) => (sum(run.serverCpuUsPerCallback) ?? 0) + run.benchCpuUsPerCallback + (run.brokerCpuUsPerCallback ?? Number.NaN),
      );
    const tables: Table[] = [
      {
        title: `Ingest: ${count} callbacks (~300 B body) after ${warmup} of warm-up, persistent, confirmed, quorum queues, ${ctx.broker.hasPlugin ? 'plugin' : 'queues'} mode; ${rounds} rounds`,
        headers: [
          'run',
          's',
          'accepted/s',
          '× library',
          'p50 ms',
          'p99 ms',
          'p99.9 ms',
          'server CPU µs/callback (per process)',
          'bench CPU µs/callback',
          'broker CPU µs/callback',
        ],
        rows: runs.map((run) => [
          run.name,
          fmt(run.seconds, 1),
          fmt(run.rate),
          // A row of a round against that round's library run; the others against the median library rate.
          played.some((each) => each.library === run) ? 'ref' : fmt(ratioOf(run), 2),
          fmt(run.latency.p50, 1),
          fmt(run.latency.p99, 1),
          fmt(run.latency.p999, 1),
          run.serverCpuUsPerCallback ? run.serverCpuUsPerCallback.map((cpu) => fmt(cpu)).join(' + ') : 'n/a',
          fmt(run.benchCpuUsPerCallback),
          fmt(run.brokerCpuUsPerCallback),
        ]),
      },
      {
        title:
          'Medians of the rounds: × library, and CPU per accepted callback of the whole machine (server processes + bench process + broker)',
        headers: ['row', '× library (each round)', 'server µs', 'bench µs', 'broker µs', 'machine µs', 'library machine µs ÷ machine µs'],
        rows: (['library', ...KINDS] as const).map((kind) => [
          kind === 'library' ? played[0]!.library.name : played[0]![kind].name,
          kind === 'library' ? 'ref' : `${fmt(median(ratios[kind]), 2)} (${ratios[kind].map((ratio) => fmt(ratio, 2)).join(', ')})`,
          fmt(medianOf(kind, (run) => sum(run.serverCpuUsPerCallback))),
          fmt(medianOf(kind, (run) => run.benchCpuUsPerCallback)),
          fmt(medianOf(kind, (run) => run.brokerCpuUsPerCallback)),
          fmt(machine(kind)),
          kind === 'library' ? 'ref' : fmt(machine('library') / machine(kind), 2),
        ]),
      },
    ];
    const profiled = runs.find((run) => run.profile)?.profile;
    const floorRatio = median(ratios.floor);
    const notes = [
      `Single POSTs reach ${fmt(median(ratios.ingest), 2)}× the library's rate (goal ≥ 0.7×); the floor ${fmt(floorRatio, 2)}×, two ingest processes ${fmt(median(ratios.double), 2)}× (medians of ${rounds} rounds). Against the median library rate: batches ${fmt(batch.rate / libraryRate, 2)}×, single POSTs from undici's Pool ${fmt(undici.rate / libraryRate, 2)}×. Latency is per call: one publish(), one POST, or one batch POST of ${BATCH}.`,
      `Single POSTs: ${CONCURRENCY} keep-alive connections, one request each at a time (no pipelining), from the lean client unless the row says otherwise; ingest ×2 splits them evenly between two ingest processes (server CPU: each process's CPU per callback of the run, so the sum is the cost of one callback). Floor: bench/scenarios/ingest-floor.ts, a bare node:http server (no framework, token or schema) that parses the JSON, calls the library's publish() and answers 202 after the confirm.`,
      `When every core is busy, a row's rate is bounded by the machine's CPU per callback: the library needs ${fmt(machine('library'))} µs (publisher + broker), the ingest ${fmt(machine('ingest'))} µs, the floor ${fmt(machine('floor'))} µs (server + load generator + broker), so on ${cpus().length} cores the ratio is at most about their quotient (last column).${floorRatio < 0.7 ? ' The floor stays under 0.7× too: on this machine no HTTP layer in Node reaches the goal.' : ''}`,
      'Bench CPU is the bench process: in the library run the publisher itself, in the other runs the HTTP client (the lean client: prepared request bytes, answers read by status line and Content-Length).',
    ];
    if (profiled) {
      const lines = (list: ProfileSummary['frames']): string[][] => list.map((line) => [line.name, fmt(line.ms), fmt(line.percent, 1)]);
      tables.push({
        title: 'Profile of the ingest: self time by frame (after start-up, idle excluded)',
        headers: ['frame', 'ms', '% of busy'],
        rows: lines(profiled.summary.frames),
      });
      tables.push({
        title: 'Profile of the ingest: self time by module',
        headers: ['module', 'ms', '% of busy'],
        rows: lines(profiled.summary.modules.slice(0, 12)),
      });
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
