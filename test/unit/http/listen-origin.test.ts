import { describe, expect, it } from 'vitest';
import { listenOrigin } from '../../../src/http/listen-origin.js';

describe('listenOrigin', () => {
  it('reaches a wildcard listener on loopback', () => {
    expect(listenOrigin('0.0.0.0', 8080)).toBe('http://127.0.0.1:8080');
    expect(listenOrigin('::', 8080)).toBe('http://[::1]:8080');
  });
  it('brackets an IPv6 address and keeps an IPv4 one', () => {
    expect(listenOrigin('::1', 9)).toBe('http://[::1]:9');
    expect(listenOrigin('127.0.0.1', 9)).toBe('http://127.0.0.1:9');
  });
});
