import { describe, it, expect } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import type { RelayError } from '../../../src/errors.js';
import { configError } from '../../support/config-error.js';

/** The problem lines of a CR_ERR_CONFIG message (after its "invalid configuration:" heading). */
const problemLines = (error: RelayError): string[] => error.message.split('\n').slice(1);

describe('isolation settings: defaults (seed 002)', () => {
  it('fills every isolation setting when the environment is empty', () => {
    expect(loadConfig({})).toMatchObject({
      isolation: 'on',
      targetKey: 'origin',
      targetConcurrency: 100,
      targetInitialConcurrency: 5,
      slowThreshold: 3_000,
      healthWindow: 20,
      degradeThreshold: 5,
      recoverThreshold: 2,
      quietPeriod: 30_000,
      probeConcurrency: 1,
      maxProbes: 10,
      healthMaxTargets: 10_000,
    });
  });

  it.each([
    ['1', 1],
    ['9', 1],
    ['10', 1],
    ['11', 2],
    ['99', 10],
    ['100', 10],
    ['101', 11],
    ['250', 25],
    ['65535', 6_554],
  ])(
    'derives MAX_PROBES as ceil(PREFETCH/10), min 1, and TARGET_CONCURRENCY as PREFETCH (no cap) (PREFETCH=%s → %i)',
    (prefetch, tenth) => {
      const config = loadConfig({ PREFETCH: prefetch });
      expect([config.targetConcurrency, config.maxProbes]).toEqual([Number(prefetch), tenth]);
    },
  );

  it('lets each derived setting be set on its own, the others still derived; a cap above PREFETCH is PREFETCH', () => {
    expect(loadConfig({ PREFETCH: '50', TARGET_CONCURRENCY: '7' })).toMatchObject({ targetConcurrency: 7, maxProbes: 5 });
    expect(loadConfig({ PREFETCH: '50', MAX_PROBES: '2' })).toMatchObject({ targetConcurrency: 50, maxProbes: 2 });
    expect(loadConfig({ PREFETCH: '50', TARGET_CONCURRENCY: '70' })).toMatchObject({ targetConcurrency: 50 });
  });

  it('treats an empty derived setting as its default', () => {
    const config = loadConfig({ TARGET_CONCURRENCY: '', MAX_PROBES: '', RECOVER_THRESHOLD: '' });
    expect(config).toMatchObject({ targetConcurrency: 100, maxProbes: 10, degradeThreshold: 5, recoverThreshold: 2 });
  });

  it.each([
    ['1', 0],
    ['2', 1],
    ['3', 1],
    ['7', 3],
    ['10', 5],
    ['19', 9],
    ['20', 10],
  ])('derives RECOVER_THRESHOLD as floor(DEGRADE_THRESHOLD/2) (DEGRADE_THRESHOLD=%s → %i)', (degrade, recover) => {
    expect(loadConfig({ DEGRADE_THRESHOLD: degrade }).recoverThreshold).toBe(recover);
  });

  it('derives RECOVER_THRESHOLD from a larger window and threshold', () => {
    expect(loadConfig({ HEALTH_WINDOW: '100', DEGRADE_THRESHOLD: '51' })).toMatchObject({
      healthWindow: 100,
      degradeThreshold: 51,
      recoverThreshold: 25,
    });
  });
});

describe('isolation settings: valid values', () => {
  it('parses every isolation setting from its env var', () => {
    const config = loadConfig({
      ISOLATION: 'off',
      TARGET_KEY: 'host',
      TARGET_CONCURRENCY: '4',
      SLOW_THRESHOLD: '1.5s',
      HEALTH_WINDOW: '50',
      DEGRADE_THRESHOLD: '25',
      RECOVER_THRESHOLD: '12',
      QUIET_PERIOD: '2m',
      PROBE_CONCURRENCY: '2',
      MAX_PROBES: '6',
      HEALTH_MAX_TARGETS: '500',
    });
    expect(config).toMatchObject({
      isolation: 'off',
      targetKey: 'host',
      targetConcurrency: 4,
      slowThreshold: 1_500,
      healthWindow: 50,
      degradeThreshold: 25,
      recoverThreshold: 12,
      quietPeriod: 120_000,
      probeConcurrency: 2,
      maxProbes: 6,
      healthMaxTargets: 500,
    });
  });

  it('accepts RECOVER_THRESHOLD=0 (recover only once the window is clean)', () => {
    expect(loadConfig({ RECOVER_THRESHOLD: '0' }).recoverThreshold).toBe(0);
  });

  it('accepts DEGRADE_THRESHOLD equal to HEALTH_WINDOW, and RECOVER_THRESHOLD just below it', () => {
    expect(loadConfig({ HEALTH_WINDOW: '5', DEGRADE_THRESHOLD: '5', RECOVER_THRESHOLD: '4' })).toMatchObject({
      healthWindow: 5,
      degradeThreshold: 5,
      recoverThreshold: 4,
    });
    expect(loadConfig({ HEALTH_WINDOW: '1', DEGRADE_THRESHOLD: '1' })).toMatchObject({
      healthWindow: 1,
      degradeThreshold: 1,
      recoverThreshold: 0,
    });
  });

  it('accepts QUIET_PERIOD=0 and durations in every unit', () => {
    expect(loadConfig({ QUIET_PERIOD: '0' }).quietPeriod).toBe(0);
    expect(loadConfig({ QUIET_PERIOD: '500ms' }).quietPeriod).toBe(500);
    expect(loadConfig({ SLOW_THRESHOLD: '250' }).slowThreshold).toBe(250);
    expect(loadConfig({ SLOW_THRESHOLD: '1m' }).slowThreshold).toBe(60_000);
  });

  it('trims whitespace around counts', () => {
    expect(loadConfig({ HEALTH_WINDOW: ' 30 ', DEGRADE_THRESHOLD: ' 12 ' })).toMatchObject({
      healthWindow: 30,
      degradeThreshold: 12,
      recoverThreshold: 6,
    });
  });
});

const INVALID: Array<[string, string]> = [
  ['ISOLATION', 'maybe'],
  ['ISOLATION', 'ON'],
  ['ISOLATION', ''],
  ['TARGET_KEY', 'path'],
  ['TARGET_KEY', 'Origin'],
  ['TARGET_CONCURRENCY', '0'],
  ['TARGET_CONCURRENCY', '-1'],
  ['TARGET_CONCURRENCY', 'ten'],
  ['TARGET_INITIAL_CONCURRENCY', '0'],
  ['SLOW_THRESHOLD', '0'],
  ['SLOW_THRESHOLD', 'fast'],
  ['SLOW_THRESHOLD', '1d'],
  ['HEALTH_WINDOW', '0'],
  ['HEALTH_WINDOW', ''],
  ['HEALTH_WINDOW', '2e1'],
  ['DEGRADE_THRESHOLD', '0'],
  ['DEGRADE_THRESHOLD', 'x'],
  ['RECOVER_THRESHOLD', '-1'],
  ['RECOVER_THRESHOLD', '2.5'],
  ['RECOVER_THRESHOLD', 'half'],
  ['QUIET_PERIOD', 'a while'],
  ['QUIET_PERIOD', '-5s'],
  ['PROBE_CONCURRENCY', '0'],
  ['PROBE_CONCURRENCY', ''],
  ['MAX_PROBES', '0'],
  ['MAX_PROBES', 'all'],
  ['HEALTH_MAX_TARGETS', '0'],
  ['HEALTH_MAX_TARGETS', '10k'],
];

describe('isolation settings: invalid values', () => {
  it.each(INVALID)('rejects %s=%j with CR_ERR_CONFIG naming the env var and the value', (name, value) => {
    const error = configError({ [name]: value });
    expect(error.code).toBe('CR_ERR_CONFIG');
    expect(error.message).toContain(`${name} (`);
    expect(error.message).toContain(`value was "${value}"`);
  });

  it('says what a valid value looks like', () => {
    expect(configError({ ISOLATION: 'x' }).message).toMatch(/on.*off/);
    expect(configError({ TARGET_KEY: 'x' }).message).toMatch(/origin.*host/);
    expect(configError({ RECOVER_THRESHOLD: '-1' }).message).toMatch(/≥ 0, or empty for the default/);
    expect(configError({ MAX_PROBES: '0' }).message).toMatch(/≥ 1, or empty for the default/);
  });
});

describe('isolation settings: settings that must agree', () => {
  it('rejects DEGRADE_THRESHOLD above HEALTH_WINDOW, naming the env var, the value and the limit', () => {
    const error = configError({ DEGRADE_THRESHOLD: '21' });
    expect(error.code).toBe('CR_ERR_CONFIG');
    expect(problemLines(error)).toEqual(['  DEGRADE_THRESHOLD (degradeThreshold): must be at most HEALTH_WINDOW (20): value was "21"']);
  });

  it('rejects a HEALTH_WINDOW shrunk below the default DEGRADE_THRESHOLD, showing the threshold in force', () => {
    const error = configError({ HEALTH_WINDOW: '4' });
    expect(error.code).toBe('CR_ERR_CONFIG');
    expect(problemLines(error)).toEqual(['  DEGRADE_THRESHOLD (degradeThreshold): must be at most HEALTH_WINDOW (4): value was "5"']);
  });

  it.each(['5', '6', '20'])('rejects RECOVER_THRESHOLD=%s, not below DEGRADE_THRESHOLD (5)', (value) => {
    const error = configError({ RECOVER_THRESHOLD: value });
    expect(error.code).toBe('CR_ERR_CONFIG');
    expect(problemLines(error)).toEqual([
      `  RECOVER_THRESHOLD (recoverThreshold): must be below DEGRADE_THRESHOLD (5): value was "${value}"`,
    ]);
  });

  it('rejects RECOVER_THRESHOLD left in place when DEGRADE_THRESHOLD is lowered to it', () => {
    const error = configError({ DEGRADE_THRESHOLD: '4', RECOVER_THRESHOLD: '4' });
    expect(error.message).toContain('RECOVER_THRESHOLD (recoverThreshold): must be below DEGRADE_THRESHOLD (4): value was "4"');
    expect(error.message).not.toContain('DEGRADE_THRESHOLD (degradeThreshold)');
  });

  it('reports both problems at once, one per line', () => {
    const error = configError({ HEALTH_WINDOW: '8', DEGRADE_THRESHOLD: '9', RECOVER_THRESHOLD: '9' });
    const lines = problemLines(error);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain('DEGRADE_THRESHOLD (degradeThreshold)');
    expect(lines[0]).toContain('value was "9"');
    expect(lines[1]).toContain('RECOVER_THRESHOLD (recoverThreshold)');
    expect(lines[1]).toContain('value was "9"');
  });

  it('shows the env var exactly as given', () => {
    expect(configError({ DEGRADE_THRESHOLD: ' 30 ' }).message).toContain('value was " 30 "');
  });

  it('checks single-setting validity first: a bad format is reported without the cross-field check', () => {
    const error = configError({ HEALTH_WINDOW: 'many', RECOVER_THRESHOLD: '10' });
    expect(error.message).toContain('HEALTH_WINDOW (');
    expect(error.message).not.toContain('RECOVER_THRESHOLD');
  });

  it('never derives a RECOVER_THRESHOLD that fails the check', () => {
    for (let degrade = 1; degrade <= 20; degrade += 1) {
      const config = loadConfig({ DEGRADE_THRESHOLD: String(degrade) });
      expect(config.recoverThreshold).toBeLessThan(config.degradeThreshold);
    }
  });
});

describe('isolation settings: limits of the broker protocol', () => {
  it('rejects PREFETCH above 65535 (basic.qos prefetch-count is an unsigned 16-bit integer)', () => {
    expect(configError({ PREFETCH: '65536' }).code).toBe('CR_ERR_CONFIG');
  });

  it.each(['0', '65', 'x', '1.5'])('rejects LANES=%s, naming the key and the value', (value) => {
    const error = configError({ LANES: value });
    expect(error.code).toBe('CR_ERR_CONFIG');
    expect(error.message).toContain('LANES (lanes)');
    expect(error.message).toContain(`value was "${value}"`);
  });

  it('takes LANES from 1 to 64, default 8', () => {
    expect([loadConfig({}).lanes, loadConfig({ LANES: '1' }).lanes, loadConfig({ LANES: '64' }).lanes]).toEqual([8, 1, 64]);
  });
});
