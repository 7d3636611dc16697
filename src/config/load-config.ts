import convict from 'convict';
import { RelayError } from '../errors.js';
import { registerFormats } from './formats.js';
import { configSchema } from './schema.js';
import { redactUrl } from './redact-url.js';

type Schema = typeof configSchema;
type Raw = { [K in keyof Schema]: Schema[K]['default'] };

/** The validated settings; durations in milliseconds. */
export type RelayConfig = Omit<Raw, 'maxAttempts' | 'delayMode' | 'queueType' | 'logLevel'> & {
  delayMode: 'auto' | 'plugin' | 'queues';
  queueType: 'quorum' | 'classic';
  logLevel: string;
  /** Resolved: MAX_ATTEMPTS, or the schedule length + 1. */
  maxAttempts: number;
};

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
  return { ...raw, maxAttempts: raw.maxAttempts ?? raw.retrySchedule.length + 1 } as RelayConfig;
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
      const shown = value === undefined ? '' : `: value was "${key === 'amqpUrl' ? redactUrl(value) : value}"`;
      return `  ${envName(key)} (${key}): ${problem}${shown}`;
    })
    .join('\n');
}
