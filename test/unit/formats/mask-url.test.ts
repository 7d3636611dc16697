import { describe, expect, it } from 'vitest';
import { maskUrl, redactUrl } from '../../../src/formats/mask-url.js';

describe('maskUrl', () => {
  it.each([
    ['https://example.com/hooks/orders', 'https://example.com/hooks/orders'],
    ['https://user:pass@example.com/hook', 'https://***@example.com/hook'],
    ['https://user@example.com/hook', 'https://***@example.com/hook'],
    ['https://:p%40ss@example.com:8443/hook', 'https://***@example.com:8443/hook'],
    ['https://example.com/hook?token=abc&sig=def', 'https://example.com/hook?token=***&sig=***'],
    ['https://example.com/hook?token=a%26b%3Dc&x=1', 'https://example.com/hook?token=***&x=***'],
    ['https://example.com/hook?to%6Ben=abc', 'https://example.com/hook?to%6Ben=***'],
    ['https://example.com/hook?s3cr3t-bare-key&a=', 'https://example.com/hook?***&a=***'],
    ['https://example.com/hook?', 'https://example.com/hook'],
    ['https://example.com/hook#frag=secret', 'https://example.com/hook'],
    ['https://u:p@example.com/a?k=v#f', 'https://***@example.com/a?k=***'],
    ['http://[::1]:8080/x?key=1', 'http://[::1]:8080/x?key=***'],
    ['http://u:p@[fe80::1%25eth0]/x', 'http://***@[fe80::1%25eth0]/x'],
    ['https://EXAMPLE.com/Path?A=1', 'https://example.com/Path?A=***'],
    ['https://example.com/a b?q=x y', 'https://example.com/a%20b?q=***'],
    ['not a url', 'not a url'],
    ['', ''],
    ['//user:pass@host/x?token=abc#frag', '***@host/x?token=***'],
    ['http://[::1/x?token=abc', 'http://[::1/x?token=***'],
    ['http://user:pa ss@[bad/x?sig=1#f', 'http://***@[bad/x?sig=***'],
  ])('%s → %s', (input, shown) => {
    expect(maskUrl(input)).toBe(shown);
    // Masking what is shown again changes nothing: events stored masked may be masked again on display.
    expect(maskUrl(shown)).toBe(shown);
  });
});

describe('redactUrl (broker URLs)', () => {
  it('masks only the user-info, keeping the query of settings', () => {
    expect(redactUrl('amqp://guest:secret@rabbit:5672/vhost?heartbeat=30')).toBe('amqp://***@rabbit:5672/vhost?heartbeat=30');
  });
});
