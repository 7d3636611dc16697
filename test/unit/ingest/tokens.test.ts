import { describe, expect, it } from 'vitest';
import { createTokenCheck, parseIngestTokens } from '../../../src/ingest/tokens.js';
import { configError } from '../../support/config-error.js';

const A = 'a'.repeat(16);
const B = 'token-B_0123456789';

describe('INGEST_TOKENS', () => {
  it('parses a comma-separated list of name:token or bare tokens (named default), spaces ignored; empty means none', () => {
    expect(parseIngestTokens(` ${A} , acme : ${B},acme:${A}`)).toEqual([
      { name: 'default', token: A },
      { name: 'acme', token: B },
      { name: 'acme', token: A },
    ]);
    expect(parseIngestTokens('')).toEqual([]);
    expect(() => parseIngestTokens(`a b:${A}`)).toThrow(/token 1: the name before ":"/);
    expect(() => parseIngestTokens(`:${A}`)).toThrow(/token 1: the name before ":"/);
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
  const check = createTokenCheck([
    { name: 'default', token: A },
    { name: 'acme', token: B },
  ]);

  it('accepts every listed token (rotation) as a Bearer credential, giving its name', () => {
    expect(check(`Bearer ${A}`)).toBe('default');
    expect(check(`bearer ${B}`)).toBe('acme');
  });

  it('refuses anything else', () => {
    for (const header of [undefined, '', A, `Basic ${A}`, `Bearer ${A}x`, `Bearer ${A.slice(1)}`, 'Bearer ', `Bearer ${A} ${B}`]) {
      expect(check(header), String(header)).toBeUndefined();
    }
    expect(createTokenCheck([])(`Bearer ${A}`)).toBeUndefined();
  });
});
