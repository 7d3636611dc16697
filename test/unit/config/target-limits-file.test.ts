import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTargetLimits } from '../../../src/config/target-limits-file.js';
import { isRelayError, type RelayError } from '../../../src/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'target-limits-'));
let files = 0;
function limitsFile(value: unknown): string {
  const path = join(dir, `limits-${(files += 1)}.json`);
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

function loadError(path: string): RelayError {
  try {
    loadTargetLimits(path);
  } catch (error) {
    if (isRelayError(error, 'CR_ERR_CONFIG')) return error;
    throw error;
  }
  throw new Error(`${path} was accepted`);
}

describe('loadTargetLimits (TARGET_LIMITS_FILE)', () => {
  it('no file: no limits; rates per second, minute or hour; origins normalised', () => {
    expect(loadTargetLimits('').size).toBe(0);
    const limits = loadTargetLimits(
      limitsFile({
        'https://a.example/': { rate: '20/s', burst: 5 },
        'http://b.example:8080': { rate: '600/m', concurrency: 2 },
        'https://c.example': { concurrency: 1 },
        'https://d.example': { rate: 0.5 },
      }),
    );
    expect([...limits]).toEqual([
      ['https://a.example', { rate: 20, burst: 5 }],
      ['http://b.example:8080', { rate: 10, concurrency: 2 }],
      ['https://c.example', { concurrency: 1 }],
      ['https://d.example', { rate: 0.5 }],
    ]);
  });

  it('names the file, the origin, the field and the value of a bad entry', () => {
    const rate = limitsFile({ 'https://a.example': { rate: '20 per second' } });
    expect(loadError(rate).message).toBe(
      `TARGET_LIMITS_FILE (${rate}): origin "https://a.example": rate must be a rate such as 20/s, 600/m or 1000/h (value was "20 per second")`,
    );
    expect(loadError(rate).field).toBe('https://a.example.rate');
    const burst = limitsFile({ 'https://a.example': { rate: 5, burst: 0 } });
    expect(loadError(burst).message).toContain('burst must be a whole number from 1 to 1000000 (value was 0)');
    expect(loadError(limitsFile({ 'https://a.example': { burst: 3 } })).message).toContain('rate give a rate, a concurrency or both');
    expect(loadError(limitsFile({ 'https://a.example': { rate: 5, speed: 3 } })).message).toContain(
      'speed is not a limit field (rate, burst, concurrency)',
    );
    expect(loadError(limitsFile({ 'https://a.example/hook': { rate: 5 } })).message).toContain('"https://a.example/hook" is not an origin');
    expect(loadError(limitsFile({ 'https://a.example': 5 })).message).toContain('must be an object of rate, burst, concurrency');
  });

  it('a file that is missing, not JSON, or not an object of limits', () => {
    const missing = join(dir, 'missing.json');
    expect(loadError(missing).message).toBe(`TARGET_LIMITS_FILE (${missing}): cannot read the file as JSON (ENOENT)`);
    const list = limitsFile([]);
    expect(loadError(list).message).toBe(`TARGET_LIMITS_FILE (${list}): must hold a JSON object of origin → limit`);
    expect(loadError(list).field).toBe('TARGET_LIMITS_FILE');
  });
});
