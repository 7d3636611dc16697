import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadRetryPolicies, MAX_POLICY_HEADER_BYTES } from '../../../src/config/retry-policies-file.js';
import { isRelayError, type RelayError } from '../../../src/errors.js';
import type { PolicyDefaults } from '../../../src/policy/message-policy.js';

const DEFAULTS: PolicyDefaults = {
  retry: { schedule: [15_000, 30_000], maxAttempts: 3, jitter: 0.1, retryAfterMaxMs: 60_000, successBody: '' },
  timeoutMs: 10_000,
};

const dir = mkdtempSync(join(tmpdir(), 'retry-policies-'));
let files = 0;
function file(content: string): string {
  const path = join(dir, `policies-${(files += 1)}.json`);
  writeFileSync(path, content);
  return path;
}
const policiesFile = (value: unknown): string => file(JSON.stringify(value));

function loadError(path: string): RelayError {
  try {
    loadRetryPolicies(path, DEFAULTS);
  } catch (error) {
    if (isRelayError(error, 'CR_ERR_CONFIG')) return error;
    throw error;
  }
  throw new Error(`${path} was accepted`);
}

describe('loadRetryPolicies', () => {
  it('no file: no named policies, the defaults kept', () => {
    const policies = loadRetryPolicies('', DEFAULTS);
    expect(policies.byName.size).toBe(0);
    expect(policies.defaults).toBe(DEFAULTS);
  });

  it("resolves every field a policy sets, in the settings' own formats", () => {
    const path = policiesFile({ payment: { schedule: '15s,15s,30s,3m', maxAttempts: 5, timeout: '5s', successBody: 'success' } });
    expect(loadRetryPolicies(path, DEFAULTS).byName.get('payment')).toEqual({
      name: 'payment',
      retry: { schedule: [15_000, 15_000, 30_000, 180_000], maxAttempts: 5, jitter: 0.1, retryAfterMaxMs: 60_000, successBody: 'success' },
      timeoutMs: 5_000,
    });
  });

  it("a missing field is the worker's setting; a schedule without maxAttempts gets its length + 1", () => {
    const path = policiesFile({ empty: {}, quick: { schedule: '1s,2s,3s,4s' }, patient: { maxAttempts: '7', timeout: 2500 } });
    const { byName } = loadRetryPolicies(path, DEFAULTS);
    expect(byName.get('empty')).toEqual({ name: 'empty', retry: DEFAULTS.retry, timeoutMs: 10_000 });
    expect(byName.get('quick')?.retry).toMatchObject({ schedule: [1_000, 2_000, 3_000, 4_000], maxAttempts: 5 });
    expect(byName.get('patient')).toMatchObject({ retry: { schedule: [15_000, 30_000], maxAttempts: 7 }, timeoutMs: 2_500 });
  });

  it.each([
    ['schedule', { schedule: '15s,soon' }, /schedule: must be a comma-separated list of durations .*: value was "15s,soon"/],
    ['schedule', { schedule: ['15s'] }, /schedule: must be a string such as "15s,30s,3m": value was \["15s"\]/],
    ['schedule', { schedule: '' }, /schedule: must be a comma-separated list/],
    ['maxAttempts', { maxAttempts: 0 }, /maxAttempts: must be a whole number ≥ 1: value was 0/],
    ['maxAttempts', { maxAttempts: 2.5 }, /maxAttempts: must be a whole number ≥ 1: value was 2.5/],
    ['timeout', { timeout: 'forever' }, /timeout: must be a duration from 1ms to .*: value was "forever"/],
    ['timeout', { timeout: '0s' }, /timeout: must be a duration from 1ms/],
    ['successBody', { successBody: true }, /successBody: must be a string: value was true/],
    ['retries', { retries: 3 }, /retries: is not a policy field \(schedule, maxAttempts, timeout, successBody\)/],
  ])('names the file, the policy and the field %s', (field, policy, message) => {
    const path = policiesFile({ ok: {}, payment: policy });
    const error = loadError(path);
    expect(error.message).toMatch(new RegExp(`^RETRY_POLICIES_FILE \\(${path}\\): policy "payment": `));
    expect(error.message).toMatch(message);
    expect(error.field).toBe(`payment.${field}`);
  });

  it('a policy that is not an object, or whose name no callback can carry', () => {
    expect(loadError(policiesFile({ payment: '15s,30s' })).message).toMatch(
      /policy "payment": must be an object of schedule, maxAttempts, timeout, successBody/,
    );
    expect(loadError(policiesFile({ 'pay ment': {} })).message).toMatch(/policy "pay ment": the name must be 1-64 letters/);
  });

  it('a policy whose headers would not fit on every retry copy', () => {
    const error = loadError(policiesFile({ chatty: { successBody: 'x'.repeat(MAX_POLICY_HEADER_BYTES) } }));
    expect(error.message).toMatch(
      /policy "chatty": schedule, successBody: take \d+ bytes of headers on each retry copy, over the limit of 1024/,
    );
  });

  it('a file that is missing, not JSON, or not an object of policies', () => {
    const missing = join(dir, 'missing.json');
    expect(loadError(missing).message).toBe(`RETRY_POLICIES_FILE (${missing}): cannot read the file as JSON (ENOENT)`);
    const broken = file('{"payment": ');
    expect(loadError(broken).message).toMatch(
      new RegExp(`^RETRY_POLICIES_FILE \\(${broken}\\): cannot read the file as JSON \\(invalid JSON: `),
    );
    const list = policiesFile([{ schedule: '1s' }]);
    expect(loadError(list).message).toBe(`RETRY_POLICIES_FILE (${list}): must hold a JSON object of policy name → policy`);
    expect(loadError(list).field).toBe('RETRY_POLICIES_FILE');
  });
});
