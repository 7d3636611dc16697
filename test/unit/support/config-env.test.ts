import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import { configEnv } from '../../support/worker-process.js';

describe('configEnv (the env of a spawned worker)', () => {
  it('round-trips every setting through the schema, so a spawned worker runs the same configuration', () => {
    const config = loadConfig({
      TARGET_ALLOW: '127.0.0.0/8',
      RETRY_SCHEDULE: '250ms,2s',
      HTTP_TIMEOUT: '1500ms',
      LANES: '3',
      HISTORY: 'on',
      EVENTS: 'durable',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    });
    expect(loadConfig(configEnv(config))).toEqual(config);
  });

  it('leaves unset optional settings out and names every value by its env var', () => {
    const env = configEnv(loadConfig({}));
    expect(env).toMatchObject({ HTTP_TIMEOUT: '10000ms', PREFETCH: '100', LOG_LEVEL: 'info' });
    expect(Object.values(env).every((value) => typeof value === 'string')).toBe(true);
  });
});
