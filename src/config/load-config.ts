import convict from 'convict';
import { RelayError } from '../errors.js';
import { registerFormats } from './formats.js';
import { configSchema } from './schema.js';
import { redactUrls } from './redact-url.js';

type Schema = typeof configSchema;
type Raw = { [K in keyof Schema]: Schema[K]['default'] };

/** The validated settings; durations in milliseconds. */
type Derived = 'maxAttempts' | 'targetConcurrency' | 'recoverThreshold' | 'maxProbes' | 'duePrefetch';
export type RelayConfig = Omit<
  Raw,
  Derived | 'delayMode' | 'queueType' | 'logLevel' | 'logFormat' | 'isolation' | 'targetKey' | 'events' | 'history' | 'targetPolicy'
> & {
  delayMode: 'auto' | 'plugin' | 'queues';
  queueType: 'quorum' | 'classic';
  logLevel: string;
  logFormat: 'auto' | 'json' | 'pretty';
  isolation: 'on' | 'off';
  targetKey: 'origin' | 'host';
  events: 'on' | 'durable' | 'off';
  history: 'on' | 'off';
  targetPolicy: 'default' | 'strict';
} & { [K in Derived]: number };

/** Settings whose values never appear in an error message. */
const SECRET_KEYS = new Set(['signingSecret', 'ingestTokens', 'consoleTokens']);

const envName = (key: string): string => (configSchema as Record<string, { env: string }>)[key]?.env ?? key;

/**
 * Reads and validates every setting from `env` (default: `process.env`). Throws `CR_ERR_CONFIG`
 * naming each bad setting by its env var and the offending value, before anything connects.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): RelayConfig {
  registerFormats();
  let raw: Raw;
  try {
    const config = convict(configSchema, { env, args: [] });
    config.validate({ allowed: 'strict' });
    raw = config.getProperties() as Raw;
  } catch (error) {
    throw new RelayError('CR_ERR_CONFIG', `invalid configuration:\n${describe(error, env)}`, { cause: error });
  }
  return resolveDerived(raw, env);
}

/** Fills the settings whose defaults depend on others, and checks the settings that must agree. */
function resolveDerived(raw: Raw, env: NodeJS.ProcessEnv): RelayConfig {
  const tenth = Math.max(1, Math.ceil(raw.prefetch / 10));
  const config = {
    ...raw,
    maxAttempts: raw.maxAttempts ?? raw.retrySchedule.length + 1,
    targetConcurrency: Math.min(raw.targetConcurrency ?? raw.prefetch, raw.prefetch),
    duePrefetch: raw.duePrefetch ?? raw.prefetch,
    maxProbes: raw.maxProbes ?? tenth,
    recoverThreshold: raw.recoverThreshold ?? Math.floor(raw.degradeThreshold / 2),
  } as RelayConfig;
  const problems: string[] = [];
  if (config.degradeThreshold > config.healthWindow) {
    problems.push(
      `  DEGRADE_THRESHOLD (degradeThreshold): must be at most HEALTH_WINDOW (${config.healthWindow}): value was "${env.DEGRADE_THRESHOLD ?? config.degradeThreshold}"`,
    );
  }
  if (config.recoverThreshold >= config.degradeThreshold) {
    problems.push(
      `  RECOVER_THRESHOLD (recoverThreshold): must be below DEGRADE_THRESHOLD (${config.degradeThreshold}): value was "${env.RECOVER_THRESHOLD ?? config.recoverThreshold}"`,
    );
  }
  if (problems.length > 0) throw new RelayError('CR_ERR_CONFIG', `invalid configuration:\n${problems.join('\n')}`);
  return config;
}

/** Rewrites convict's `key: problem: value was "x"` lines so they name the env var, never a password. */
function describe(error: unknown, env: NodeJS.ProcessEnv): string {
  const text = error instanceof Error ? error.message : String(error);
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const match = /^(\w+): (.*)$/.exec(line.trim());
      if (!match) return `  ${line.trim()}`;
      const [, key = '', rest = ''] = match;
      const problem = rest.replace(/: value was .*$/, '');
      const value = env[envName(key)];
      const shown =
        value === undefined ? '' : `: value was "${key === 'amqpUrl' ? redactUrls(value) : SECRET_KEYS.has(key) ? '[hidden]' : value}"`;
      return `  ${envName(key)} (${key}): ${problem}${shown}`;
    })
    .join('\n');
}
