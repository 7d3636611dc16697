import { describe, expect, it } from 'vitest';
import { safeNext } from '../../../src/console/safe-next.js';

describe('safeNext', () => {
  it.each([
    '/\t/evil.example/',
    '/\n/evil.example/',
    '/\r\n/evil.example',
    '//evil',
    '///evil',
    '/\\evil',
    '/\\/evil',
    '\\\\evil',
    'https://evil',
    'http:evil',
    'javascript:alert(1)',
    '%2F%2Fevil',
    '/.//evil',
    '/./\\evil',
    ' //evil',
    '',
    'dead-letters',
  ])('%j goes to the console itself', (next) => {
    const target = safeNext(next);
    expect(target.startsWith('/') && !target.startsWith('//') && !target.startsWith('/\\')).toBe(true);
    expect(new URL(target, 'http://console.test').origin).toBe('http://console.test');
  });

  it('keeps a path, query and fragment of the console', () => {
    expect(safeNext('/dead-letters?reason=exhausted#m')).toBe('/dead-letters?reason=exhausted#m');
    expect(safeNext('/%2F%2Fevil')).toBe('/%2F%2Fevil');
    expect(safeNext('/%09/evil.example/')).toBe('/%09/evil.example/');
    expect(safeNext(undefined)).toBe('/');
    expect(safeNext(null)).toBe('/');
  });
});
