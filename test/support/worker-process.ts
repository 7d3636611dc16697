import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RelayConfig } from '../../src/config/load-config.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The settings of `config` as the env vars a worker process reads. */
export function configEnv(config: RelayConfig): Record<string, string> {
  return {
    AMQP_URL: config.amqpUrl,
    TOPOLOGY_PREFIX: config.topologyPrefix,
    DELAY_MODE: config.delayMode,
    QUEUE_TYPE: config.queueType,
    RETRY_SCHEDULE: config.retrySchedule.map((ms) => `${ms}ms`).join(','),
    MAX_ATTEMPTS: String(config.maxAttempts),
    RETRY_JITTER: String(config.retryJitter),
    HTTP_TIMEOUT: `${config.httpTimeout}ms`,
    DRAIN_TIMEOUT: `${config.drainTimeout}ms`,
    PREFETCH: String(config.prefetch),
    ISOLATION: config.isolation,
    TARGET_CONCURRENCY: String(config.targetConcurrency),
    TARGET_INITIAL_CONCURRENCY: String(config.targetInitialConcurrency),
    LANES: String(config.lanes),
    SLOW_THRESHOLD: `${config.slowThreshold}ms`,
    LOG_LEVEL: 'info',
    METRICS_PORT: String(config.metricsPort),
    EVENTS: config.events,
    HISTORY: config.history,
    HISTORY_MAX_AGE: config.historyMaxAge,
    TARGET_POLICY: config.targetPolicy,
    TARGET_ALLOW: config.targetAllow,
    TARGET_DENY: config.targetDeny,
  };
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
