import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/usage-error.js';
import { ERROR_CODES, isRelayError, RelayError, type RelayErrorCode } from '../../src/errors.js';
import { ForbiddenTargetError } from '../../src/http/guarded-agent.js';
import { SignatureError } from '../../src/signing/verify-callback.js';

const codes = Object.keys(ERROR_CODES) as RelayErrorCode[];

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? testFiles(path) : entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('the error taxonomy', () => {
  it('docs/errors.md has one row per code, no more, no fewer', () => {
    const rows = [...readFileSync('docs/errors.md', 'utf8').matchAll(/^\| `(CR_ERR_[A-Z_]+)` \|/gm)].map((match) => match[1]);
    expect(rows.sort()).toEqual([...codes].sort());
  });

  it('every code is asserted by a test other than this one', () => {
    const tests = testFiles('test')
      .filter((path) => !path.endsWith('errors.test.ts'))
      .map((path) => readFileSync(path, 'utf8'))
      .join('\n');
    expect(codes.filter((code) => !new RegExp(`\\b${code}\\b`).test(tests))).toEqual([]);
  });

  it('every error type of the package is a RelayError with its code', () => {
    const errors: [Error, RelayErrorCode][] = [
      [new SignatureError('CR_ERR_SIGNATURE_EXPIRED', 'too old'), 'CR_ERR_SIGNATURE_EXPIRED'],
      [new ForbiddenTargetError('10.0.0.1', ['private address']), 'CR_ERR_FORBIDDEN_TARGET'],
      [new UsageError('--limit: must be a whole number'), 'CR_ERR_USAGE'],
    ];
    for (const [error, code] of errors) {
      expect(error).toBeInstanceOf(RelayError);
      expect(isRelayError(error, code)).toBe(true);
    }
  });
});
