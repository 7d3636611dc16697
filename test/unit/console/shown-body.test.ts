import { describe, expect, it } from 'vitest';
import { shownBody } from '../../../src/console/shown-body.js';

describe('shownBody', () => {
  it('indents JSON and hides the values of credential headers the callback sends its receiver', () => {
    const body = { url: 'https://a.example/', body: { n: 1 }, headers: { Authorization: 'Bearer partner-secret', 'X-Partner-Token': 't0k', 'X-Order': '42' } };
    const shown = shownBody(Buffer.from(JSON.stringify(body)));
    expect(shown).not.toContain('partner-secret');
    expect(shown).not.toContain('t0k');
    expect(JSON.parse(shown)).toEqual({ ...body, headers: { Authorization: '[hidden]', 'X-Partner-Token': '[hidden]', 'X-Order': '42' } });
    expect(shown.split('\n').length).toBeGreaterThan(3);
  });

  it('shows anything else as its text (an invalid message may be anything)', () => {
    expect(shownBody(Buffer.from('<not json>'))).toBe('<not json>');
    expect(shownBody(Buffer.from('[1,2]'))).toBe('[\n  1,\n  2\n]');
  });
});
