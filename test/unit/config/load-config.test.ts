import { describe, it, expect } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import { configSchema } from '../../../src/config/schema.js';
import { configError } from '../../support/config-error.js';

const DEFAULT_SCHEDULE = [15e3, 15e3, 30e3, 18e4, 6e5, 12e5, 18e5, 18e5, 18e5, 36e5, 108e5, 108e5, 108e5, 216e5, 216e5];

describe('loadConfig defaults', () => {
  it('fills every setting from the schema when the environment is empty', () => {
    expect(loadConfig({})).toMatchObject({
      amqpUrl: 'amqp://localhost',
      topologyPrefix: 'callback-relay',
      delayMode: 'auto',
      queueType: 'quorum',
      deliveryLimit: 10,
      retrySchedule: DEFAULT_SCHEDULE,
      maxAttempts: 16,
      retryJitter: 0.1,
      retryAfterMax: 21_600_000,
      httpTimeout: 10_000,
      successBody: '',
      responseBodyLimit: 65_536,
      maxPayloadBytes: 1_048_576,
      prefetch: 100,
      drainTimeout: 15_000,
      publishTimeout: 10_000,
      publishBufferLimit: 1_000,
      logLevel: 'info',
      logFormat: 'auto',
      // Safe by default: loopback, private and link-local targets only when TARGET_ALLOW lists them.
      targetPolicy: 'strict',
      targetAllow: '',
    });
  });

  it('resolves maxAttempts to the schedule length + 1 (16 by default)', () => {
    const config = loadConfig({});
    expect(config.retrySchedule).toHaveLength(15);
    expect(config.maxAttempts).toBe(config.retrySchedule.length + 1);
    expect(config.maxAttempts).toBe(16);
  });

  it('treats an empty MAX_ATTEMPTS as the default', () => {
    expect(loadConfig({ MAX_ATTEMPTS: '' }).maxAttempts).toBe(16);
    expect(loadConfig({ MAX_ATTEMPTS: '', RETRY_SCHEDULE: '1s,2s,3s' }).maxAttempts).toBe(4);
  });

  it('derives maxAttempts from a custom schedule', () => {
    expect(loadConfig({ RETRY_SCHEDULE: '1s' }).maxAttempts).toBe(2);
    expect(loadConfig({ RETRY_SCHEDULE: '1s,2s' }).maxAttempts).toBe(3);
  });

  it('lets MAX_ATTEMPTS differ from the schedule length either way', () => {
    expect(loadConfig({ MAX_ATTEMPTS: '1' }).maxAttempts).toBe(1);
    expect(loadConfig({ MAX_ATTEMPTS: '40', RETRY_SCHEDULE: '1s,2s' }).maxAttempts).toBe(40);
  });

  it('moves as many due messages at once as PREFETCH unless DUE_PREFETCH says otherwise', () => {
    expect(loadConfig({}).duePrefetch).toBe(100);
    expect(loadConfig({ PREFETCH: '30' }).duePrefetch).toBe(30);
    expect(loadConfig({ PREFETCH: '30', DUE_PREFETCH: '1000' }).duePrefetch).toBe(1000);
  });

  it('ignores env vars that are present but undefined, and unrelated env vars', () => {
    expect(loadConfig({ PREFETCH: undefined, HOME: '/root', UNRELATED: 'x' })).toEqual(loadConfig({}));
  });

  it('reads settings from the given object, not from process.env', () => {
    const saved = process.env.PREFETCH;
    process.env.PREFETCH = 'not-a-number';
    try {
      expect(loadConfig({}).prefetch).toBe(100);
    } finally {
      if (saved === undefined) delete process.env.PREFETCH;
      else process.env.PREFETCH = saved;
    }
  });
});

describe('loadConfig valid values', () => {
  it('parses every setting from its env var', () => {
    const config = loadConfig({
      AMQP_URL: 'amqps://user:pw@rabbit.example:5671/vhost',
      TOPOLOGY_PREFIX: 'my-app_1.relay',
      DELAY_MODE: 'queues',
      QUEUE_TYPE: 'classic',
      DELIVERY_LIMIT: '3',
      RETRY_SCHEDULE: '1s, 2s ,1m',
      MAX_ATTEMPTS: '5',
      RETRY_JITTER: '0.25',
      RETRY_AFTER_MAX: '2h',
      HTTP_TIMEOUT: '1.5s',
      SUCCESS_BODY: 'success',
      RESPONSE_BODY_LIMIT: '1024',
      MAX_PAYLOAD_BYTES: '2048',
      PREFETCH: '1',
      DRAIN_TIMEOUT: '250',
      PUBLISH_TIMEOUT: '30s',
      PUBLISH_BUFFER_LIMIT: '5',
      LOG_LEVEL: 'silent',
    });
    expect(config).toMatchObject({
      amqpUrl: 'amqps://user:pw@rabbit.example:5671/vhost',
      topologyPrefix: 'my-app_1.relay',
      delayMode: 'queues',
      queueType: 'classic',
      deliveryLimit: 3,
      retrySchedule: [1_000, 2_000, 60_000],
      maxAttempts: 5,
      retryJitter: 0.25,
      retryAfterMax: 7_200_000,
      httpTimeout: 1_500,
      successBody: 'success',
      responseBodyLimit: 1_024,
      maxPayloadBytes: 2_048,
      prefetch: 1,
      drainTimeout: 250,
      publishTimeout: 30_000,
      publishBufferLimit: 5,
      logLevel: 'silent',
    });
  });

  it.each(['amqp://localhost', 'amqp://guest:guest@127.0.0.1:5672/%2f', 'amqps://host'])('accepts AMQP_URL %s', (url) => {
    expect(loadConfig({ AMQP_URL: url }).amqpUrl).toBe(url);
  });

  it.each(['0', '1', '0.5'])('accepts RETRY_JITTER %s', (value) => {
    expect(loadConfig({ RETRY_JITTER: value }).retryJitter).toBe(Number(value));
  });

  it.each(['auto', 'plugin', 'queues'])('accepts DELAY_MODE %s', (mode) => {
    expect(loadConfig({ DELAY_MODE: mode }).delayMode).toBe(mode);
  });

  it("accepts EVENTS=durable and HISTORY_MAX_AGE in the broker's units", () => {
    expect(loadConfig({ EVENTS: 'durable' }).events).toBe('durable');
    expect(loadConfig({ HISTORY: 'on', HISTORY_MAX_AGE: '12h' })).toMatchObject({ history: 'on', historyMaxAge: '12h' });
    expect(loadConfig({}).historyMaxAge).toBe('7D');
  });

  it('accepts a 100-character TOPOLOGY_PREFIX', () => {
    expect(loadConfig({ TOPOLOGY_PREFIX: 'p'.repeat(100) }).topologyPrefix).toHaveLength(100);
  });

  it('accepts any SUCCESS_BODY text', () => {
    expect(loadConfig({ SUCCESS_BODY: ' {"ok":true} ' }).successBody).toBe(' {"ok":true} ');
  });
});

/** [env var, invalid value] — every setting with a restricted format. */
const INVALID: Array<[string, string]> = [
  ['AMQP_URL', 'http://localhost:5672/'],
  ['AMQP_URL', 'not a url'],
  ['AMQP_URL', ''],
  ['TOPOLOGY_PREFIX', ''],
  ['TOPOLOGY_PREFIX', '.hidden'],
  ['TOPOLOGY_PREFIX', '-dash'],
  ['TOPOLOGY_PREFIX', 'has space'],
  ['TOPOLOGY_PREFIX', 'a/b'],
  ['TOPOLOGY_PREFIX', 'p'.repeat(101)],
  ['DELAY_MODE', 'fast'],
  ['DELAY_MODE', 'PLUGIN'],
  ['QUEUE_TYPE', 'stream'],
  ['DELIVERY_LIMIT', '0'],
  ['DELIVERY_LIMIT', '-1'],
  ['DELIVERY_LIMIT', '1.5'],
  ['DELIVERY_LIMIT', 'ten'],
  ['DELIVERY_LIMIT', ''],
  ['RETRY_SCHEDULE', ''],
  ['RETRY_SCHEDULE', '0s'],
  ['RETRY_SCHEDULE', '15s,0'],
  ['RETRY_SCHEDULE', '15s,,30s'],
  ['RETRY_SCHEDULE', '5x'],
  ['RETRY_SCHEDULE', '-1s'],
  ['MAX_ATTEMPTS', '0'],
  ['MAX_ATTEMPTS', '-1'],
  ['MAX_ATTEMPTS', '2.5'],
  ['MAX_ATTEMPTS', 'abc'],
  ['MAX_ATTEMPTS', ' '],
  ['RETRY_JITTER', '2'],
  ['RETRY_JITTER', '1.01'],
  ['RETRY_JITTER', '-0.1'],
  ['RETRY_JITTER', 'x'],
  ['RETRY_JITTER', ''],
  ['RETRY_AFTER_MAX', 'soon'],
  ['RETRY_AFTER_MAX', '1d'],
  ['HTTP_TIMEOUT', '-1s'],
  ['HTTP_TIMEOUT', '10 s'],
  ['LIMIT_HOLD_MAX', '0'],
  ['LIMIT_HOLD_MAX', 'a while'],
  ['RESPONSE_BODY_LIMIT', '0'],
  ['RESPONSE_BODY_LIMIT', '64k'],
  ['MAX_PAYLOAD_BYTES', '1MB'],
  ['MAX_PAYLOAD_BYTES', '0'],
  ['PREFETCH', ''],
  ['PREFETCH', '0'],
  ['PREFETCH', '1e2'],
  ['DRAIN_TIMEOUT', '1y'],
  ['DRAIN_TIMEOUT', ''],
  ['PUBLISH_TIMEOUT', 'z'],
  ['PUBLISH_BUFFER_LIMIT', '-3'],
  ['LOG_LEVEL', 'loud'],
  ['LOG_LEVEL', 'INFO'],
  ['LOG_FORMAT', 'text'],
  ['ISOLATION', 'maybe'],
  ['TARGET_KEY', 'path'],
  ['TARGET_CONCURRENCY', '0'],
  ['DUE_PREFETCH', '0'],
  ['LANES', '0'],
  ['TARGET_INITIAL_CONCURRENCY', '0'],
  ['LANES', '65'],
  ['ORDERED_SHARDS', '0'],
  ['ORDERED_SHARDS', '65'],
  ['ORDERED_SHARDS', '2.5'],
  ['ORDERED_ON_DEAD', 'park'],
  ['SLOW_THRESHOLD', 'slow'],
  ['HEALTH_WINDOW', '0'],
  ['DEGRADE_THRESHOLD', '0'],
  ['RECOVER_THRESHOLD', '-1'],
  ['QUIET_PERIOD', 'later'],
  ['OVERFLOW_AFTER', 'soon'],
  ['AUTO_PAUSE_AFTER', 'a day'],
  ['PROBE_CONCURRENCY', '0'],
  ['MAX_PROBES', 'x'],
  ['HEALTH_MAX_TARGETS', '0'],
  ['METRICS_PORT', '70000'],
  ['METRICS_HOST', 'localhost'],
  ['EVENTS', 'sometimes'],
  ['HISTORY', 'yes'],
  ['HISTORY_MAX_AGE', '7 days'],
  ['HISTORY_MAX_AGE', '0D'],
  ['TARGET_POLICY', 'lax'],
  ['TARGET_ALLOW', '10.0.0.0/33'],
  ['TARGET_DENY', 'not-an-ip'],
  ['INGEST_PORT', '70000'],
  ['INGEST_HOST', '0.0.0.0/0'],
  ['INGEST_METRICS_PORT', '-1'],
  ['INGEST_BATCH_MAX', '0'],
  ['INGEST_BATCH_BYTES', '4MB'],
  ['INGEST_INFLIGHT_BYTES', '0'],
  ['INGEST_REQUEST_TIMEOUT', '0'],
  ['INGEST_CONNECTION_TIMEOUT', 'forever'],
  ['INGEST_IDEMPOTENCY_WINDOW', '0'],
  ['INGEST_IDEMPOTENCY_KEYS', 'many'],
  ['CONSOLE_HOST', 'localhost:8081'],
  ['CONSOLE_PORT', '-1'],
  ['CONSOLE_WINDOW', 'an hour'],
  ['CONSOLE_MAX_TARGETS', '0'],
  ['CONSOLE_DEAD_SCAN', 'all'],
];

describe('loadConfig invalid values', () => {
  it('covers every env var of the schema except free text and file paths (checked when read)', () => {
    const covered = new Set(INVALID.map(([name]) => name));
    const all = Object.values(configSchema).map((setting) => setting.env);
    expect(
      all.filter((name) => !covered.has(name) && name !== 'SIGNING_SECRET' && name !== 'INGEST_TOKENS' && name !== 'CONSOLE_TOKENS'),
    ).toEqual(['SUCCESS_BODY', 'RETRY_POLICIES_FILE', 'TARGET_LIMITS_FILE', 'SIGNING_SECRET_FILE', 'SIGNING_TARGET_SECRETS_FILE']);
  });

  it('rejects a malformed CONSOLE_TOKENS naming the key, never showing a token', () => {
    for (const value of [
      'alice-token-0123456789',
      'alice:short',
      'al ice:alice-token-0123456789',
      'a:alice-token-0123456789,a:bob-token-0123456789ab',
    ]) {
      const error = configError({ CONSOLE_TOKENS: value });
      expect(error.code).toBe('CR_ERR_CONFIG');
      expect(error.message).toContain('CONSOLE_TOKENS (consoleTokens)');
      expect(error.message).toContain('[hidden]');
      expect(error.message).not.toContain('0123456789');
    }
    expect(loadConfig({ CONSOLE_TOKENS: ' alice:alice-token-0123456789 , bob:bob-token-0123456789ab ' }).consoleTokens).toContain('alice');
  });

  it('rejects a malformed SIGNING_SECRET without ever showing it', () => {
    const error = configError({ SIGNING_SECRET: 'whsec_not*base64*secret-value' });
    expect(error.message).toContain('SIGNING_SECRET (');
    expect(error.message).toContain('[hidden]');
    expect(error.message).not.toContain('secret-value');
  });

  it.each(INVALID)('rejects %s=%j with CR_ERR_CONFIG naming the env var and the value', (name, value) => {
    const error = configError({ [name]: value });
    expect(error.code).toBe('CR_ERR_CONFIG');
    expect(error.message).toContain(`${name} (`);
    expect(error.message).toContain(`value was "${value}"`);
  });

  it('names only the bad setting', () => {
    const error = configError({ PREFETCH: '0', DELIVERY_LIMIT: '3' });
    expect(error.message).toContain('PREFETCH');
    expect(error.message).not.toContain('DELIVERY_LIMIT');
  });

  it('reports every bad setting at once, one per line', () => {
    const error = configError({ PREFETCH: 'x', DELIVERY_LIMIT: 'y', LOG_LEVEL: 'loud' });
    const lines = error.message.split('\n').slice(1);
    expect(lines).toHaveLength(3);
    expect(lines.some((line) => line.includes('PREFETCH') && line.includes('"x"'))).toBe(true);
    expect(lines.some((line) => line.includes('DELIVERY_LIMIT') && line.includes('"y"'))).toBe(true);
    expect(lines.some((line) => line.includes('LOG_LEVEL') && line.includes('"loud"'))).toBe(true);
  });

  it('says what a valid value looks like', () => {
    expect(configError({ HTTP_TIMEOUT: 'soon' }).message).toMatch(/500ms, 15s, 3m or 6h/);
    expect(configError({ DELAY_MODE: 'x' }).message).toMatch(/auto.*plugin.*queues/);
    expect(configError({ MAX_ATTEMPTS: '0' }).message).toMatch(/empty for the default/);
  });

  it('keeps the underlying error as the cause', () => {
    expect(configError({ PREFETCH: '0' }).cause).toBeInstanceOf(Error);
  });
});

describe('loadConfig never shows the AMQP_URL password', () => {
  const PASSWORD = 'hunter2-s3cret';

  it.each([
    `http://guest:${PASSWORD}@rabbit:5672`,
    `tcp://guest:${PASSWORD}@rabbit`,
    `amqp://guest:${PASSWORD}@[::1`,
    `amqp://guest:${PASSWORD}@`,
    `amqp//guest:${PASSWORD}@rabbit`,
  ])('masks the password of invalid %s', (url) => {
    const error = configError({ AMQP_URL: url });
    expect(error.code).toBe('CR_ERR_CONFIG');
    expect(error.message).toContain('AMQP_URL');
    expect(error.message).not.toContain(PASSWORD);
    expect(String((error.cause as Error).message)).not.toContain(PASSWORD);
  });

  it('shows the rest of the URL with the password replaced', () => {
    const error = configError({ AMQP_URL: `http://guest:${PASSWORD}@rabbit:5672` });
    expect(error.message).toContain('value was "http://***@rabbit:5672"');
  });

  it('does not mention a valid AMQP_URL when another setting is bad', () => {
    const error = configError({ AMQP_URL: `amqp://guest:${PASSWORD}@rabbit`, PREFETCH: '0' });
    expect(error.message).not.toContain(PASSWORD);
    expect(error.message).not.toContain('AMQP_URL');
  });

  it('masks the password of a scheme-less user:password@host value', () => {
    const error = configError({ AMQP_URL: `guest:${PASSWORD}@rabbit:5672` });
    expect(error.message).not.toContain(PASSWORD);
  });
});
