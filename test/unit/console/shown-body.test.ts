import { describe, expect, it } from 'vitest';
import { shownBody } from '../../../src/console/shown-body.js';

describe('shownBody', () => {
  it('indents JSON and hides the values of credential headers the callback sends its receiver', () => {
    const body = {
      url: 'https://a.example/',
      body: { n: 1 },
      headers: { Authorization: 'Bearer partner-secret', 'X-Partner-Token': 't0k', 'X-Order': '42' },
    };
    const shown = shownBody(Buffer.from(JSON.stringify(body)));
    expect(shown).not.toContain('partner-secret');
    expect(shown).not.toContain('t0k');
    expect(JSON.parse(shown)).toEqual({ ...body, headers: { Authorization: '[hidden]', 'X-Partner-Token': '[hidden]', 'X-Order': '42' } });
    expect(shown.split('\n').length).toBeGreaterThan(3);
  });

  it('hides the wider set of credential headers and masks the URL', () => {
    const headers = { 'X-Auth-Key': 'a1', apikey: 'a2', 'Ocp-Apim-Subscription-Key': 'a3', Cookie: 'a4', 'x-tenant': 'acme' };
    const shown = JSON.parse(shownBody(Buffer.from(JSON.stringify({ url: 'https://u:pw@a.example/h?token=abc', body: 1, headers }))));
    expect(shown.headers).toEqual({
      'X-Auth-Key': '[hidden]',
      apikey: '[hidden]',
      'Ocp-Apim-Subscription-Key': '[hidden]',
      Cookie: '[hidden]',
      'x-tenant': 'acme',
    });
    expect(shown.url).toBe('https://***@a.example/h?token=***');
  });

  it('shows anything else as its text (an invalid message may be anything)', () => {
    expect(shownBody(Buffer.from('<not json>'))).toBe('<not json>');
    expect(shownBody(Buffer.from('[1,2]'))).toBe('[\n  1,\n  2\n]');
  });
});
