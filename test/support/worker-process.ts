import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RelayConfig } from '../../src/config/load-config.js';
import { configSchema } from '../../src/config/schema.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const DURATIONS = new Set(['duration', 'positive-duration']);

/**
 * The settings of `config` as the env vars a worker process reads, derived from the schema so a new
 * setting reaches spawned workers without being listed here: durations in ms, lists comma-joined,
 * unset optional values left out. Logs are JSON lines at level `info`, which the spawned-worker helpers parse.
 */
export function configEnv(config: RelayConfig): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, spec] of Object.entries(configSchema as Record<string, { env: string; format?: unknown }>)) {
    const value: unknown = config[key as keyof RelayConfig];
    if (value === null || value === undefined) continue;
    if (spec.format === 'duration-list') env[spec.env] = (value as number[]).map((ms) => `${ms}ms`).join(',');
    else if (typeof spec.format === 'string' && DURATIONS.has(spec.format)) env[spec.env] = `${value as number}ms`;
    else env[spec.env] = Array.isArray(value) ? value.join(',') : String(value);
  }
  return { ...env, LOG_LEVEL: 'info', LOG_FORMAT: 'json' };
}

export interface WorkerProcess {
  child: ChildProcess;
  /** Resolves once the worker logged that it is consuming. */
  consuming: Promise<void>;
  exited: Promise<number | null>;
  output(): string;
}

/** A worker as its own OS process (`src/consumer/main.ts` through tsx), as a container would run it. */
export function spawnWorker(config: RelayConfig, extraEnv: Record<string, string> = {}): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/consumer/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...configEnv(config), ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const consuming = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes('"msg":"consuming"')) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then((code) => reject(new Error(`worker exited (${code}) before consuming:\n${output}`)));
  });
  consuming.catch(() => {});
  return { child, consuming, exited, output: () => output };
}
