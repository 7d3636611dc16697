import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { benchBuild } from './bench-build.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
const live = new Set<ChildProcess>();

export interface BenchChild {
  pid: number;
  /** Resolves once the child printed its ready marker; rejects if it exits first. */
  ready: Promise<void>;
  /** When (Date.now()) it printed its ready marker; undefined until then. */
  readyAt(): number | undefined;
  /** The output line that held the ready marker; undefined until then. */
  readyLine(): string | undefined;
  exited: Promise<number | null>;
  /** The last 64 KiB of its stdout and stderr. */
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

/** `node ARGS…` in the project root, ready once its output contains `readyMarker`. */
export function spawnNode(args: string[], env: Record<string, string>, readyMarker: string): BenchChild {
  const file = args[args.length - 1] ?? '';
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  let output = '';
  let readyAt: number | undefined;
  let readyLine: string | undefined;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  void exited.then(() => live.delete(child));
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-65_536);
      if (readyAt === undefined && output.includes(readyMarker)) {
        readyAt = Date.now();
        const at = output.indexOf(readyMarker);
        const end = output.indexOf('\n', at);
        readyLine = output.slice(output.lastIndexOf('\n', at) + 1, end === -1 ? undefined : end);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then((code) => reject(new Error(`${file} exited (${code}) before it was ready:\n${output.slice(-4000)}`)));
  });
  ready.catch(() => {});
  return {
    pid: child.pid as number,
    ready,
    readyAt: () => readyAt,
    readyLine: () => readyLine,
    exited,
    output: () => output,
    async stop(graceMs = 20_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A relay worker process, compiled (see bench-build.ts): `node NODE_ARGS …/consumer/main.js`, ready once it logs "consuming". */
export const spawnRelayWorker = (env: Record<string, string>, nodeArgs: string[] = []): BenchChild =>
  spawnNode([...nodeArgs, benchBuild().relayMain], { LOG_LEVEL: 'info', TARGET_ALLOW: '127.0.0.0/8', ...env }, '"msg":"consuming"');

/** An HTTP ingest process, compiled like the worker: `node NODE_ARGS …/ingest/main.js`, ready once it logs "ingest listening". */
export const spawnIngest = (env: Record<string, string>, nodeArgs: string[] = []): BenchChild =>
  spawnNode([...nodeArgs, benchBuild().ingestMain], { LOG_LEVEL: 'info', ...env }, '"msg":"ingest listening"');

/** The floor of the ingest scenario (bench/scenarios/ingest-floor.ts, compiled like the ingest), ready once it prints "listening". */
export const spawnIngestFloor = (env: Record<string, string>): BenchChild =>
  spawnNode([benchBuild().script('scenarios/ingest-floor')], { LOG_LEVEL: 'info', ...env }, 'listening');

/** A ceiling consumer (bench/NAME.ts, transpiled), ready once it prints "consuming". */
export const spawnBenchScript = (name: 'minimal-consumer' | 'raw-consumer', env: Record<string, string>): BenchChild =>
  spawnNode([benchBuild().script(name)], env, 'consuming');

/** Kills every child still running (an interrupted run). */
export function killAllChildren(): void {
  for (const child of live) child.kill('SIGKILL');
}

/** Resident memory of a local process in MB (VmRSS), or undefined when it is gone or not local. */
export function rssMb(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) a local process has used so far. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/**
 * The pid of a local broker's Erlang VM (beam.smp): the one whose environment holds
 * `RABBITMQ_NODE_PORT=<amqpPort>`, else the only RabbitMQ VM on this machine (a node started by
 * scripts/local-broker.sh or the system service, given as AMQP_URL).
 */
export function findBeamPid(amqpPort: string): number | undefined {
  const rabbits: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (!cmdline.includes('beam.smp') || !cmdline.includes('rabbit')) continue;
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(`RABBITMQ_NODE_PORT=${amqpPort}`)) return Number(entry);
      rabbits.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return rabbits.length === 1 ? rabbits[0] : undefined;
}

/** The sum of a metric's samples whose labels include every `labels` pair, from a worker's /metrics on loopback. */
export async function scrapeMetric(port: number, name: string, labels: Record<string, string> = {}): Promise<number> {
  // Only this metric: a whole scrape also computes Node's default metrics, a cost on a busy worker (src/metrics/registry.ts).
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics?name=${encodeURIComponent(name)}`)).text();
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .filter((line) => wanted.every((pair) => line.includes(pair)))
    .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
}

/** callback_relay_callbacks_total{outcome="delivered"} of one worker. */
export const scrapeDelivered = (port: number): Promise<number> =>
  scrapeMetric(port, 'callback_relay_callbacks_total', { outcome: 'delivered' });

/** Callbacks a worker deferred because their target's circuit was open (moved unattempted, their attempt kept). */
export const deferredCount = (port: number): Promise<number> => scrapeMetric(port, 'callback_relay_moves_total', { kind: 'deferred' });
/** Callbacks a worker moved to P.slow because their target looked busy (moved unattempted). */
export const overflowCount = (port: number): Promise<number> => scrapeMetric(port, 'callback_relay_moves_total', { kind: 'overflow' });

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
