import { describe, expect, it } from 'vitest';
import { createTokenCheck, parseIngestTokens } from '../../../src/ingest/tokens.js';
import { configError } from '../../support/config-error.js';

const A = 'a'.repeat(16);
const B = 'token-B_0123456789';

describe('INGEST_TOKENS', () => {
  it('parses a comma-separated list, spaces ignored; empty means none', () => {
    expect(parseIngestTokens(` ${A} ,${B}`)).toEqual([A, B]);
    expect(parseIngestTokens('')).toEqual([]);
  });

  it('refuses a short token or odd characters, by position and without echoing the secret', () => {
    const { code, message } = configError({ INGEST_TOKENS: `${A},short` });
    expect(code).toBe('CR_ERR_CONFIG');
    expect(message).toContain('INGEST_TOKENS');
    expect(message).toContain('token 2 must be at least 16 characters');
    expect(message).toContain('[hidden]');
    expect(message).not.toContain(A);
    expect(message).not.toContain('short"');
    expect(() => parseIngestTokens('has spaces inside it!')).toThrow(/token 1 may hold only/);
  });
});

describe('createTokenCheck', () => {
  const check = createTokenCheck([A, B]);

  it('accepts every listed token (rotation) as a Bearer credential', () => {
    expect(check(`Bearer ${A}`)).toBe(true);
    expect(check(`bearer ${B}`)).toBe(true);
  });

  it('refuses anything else', () => {
    for (const header of [undefined, '', A, `Basic ${A}`, `Bearer ${A}x`, `Bearer ${A.slice(1)}`, 'Bearer ', `Bearer ${A} ${B}`]) {
      expect(check(header), String(header)).toBe(false);
    }
    expect(createTokenCheck([])(`Bearer ${A}`)).toBe(false);
  });
});
