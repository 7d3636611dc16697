import { describe, expect, it } from 'vitest';
import { escapeHtml, href, html, jsonData } from '../../../src/console/html.js';

describe('html templates', () => {
  it('escape every interpolated value, so markup from a callback stays text', () => {
    const hostile = `<script>alert(1)</script><img src=x onerror="a('b')">\``;
    const out = html`<td title="${hostile}">${hostile}</td>`.text;
    expect(out).not.toContain('<script>');
    expect(out).not.toContain('<img');
    expect(out).not.toMatch(/title="[^"]*"[^>]/);
    expect(out).toBe(`<td title="${escapeHtml(hostile)}">${escapeHtml(hostile)}</td>`);
    expect(escapeHtml(`&<>"'\``)).toBe('&amp;&lt;&gt;&quot;&#39;&#96;');
  });

  it('leave nested templates as they are, join arrays, and print nothing for null, undefined and false', () => {
    const rows = ['<a>', 'b'].map((cell) => html`<td>${cell}</td>`);
    expect(html`<tr>${rows}${null}${undefined}${false}${0}</tr>`.text).toBe('<tr><td>&lt;a&gt;</td><td>b</td>0</tr>');
  });

  it('jsonData cannot close its script element or open a comment', () => {
    const text = jsonData({ x: '</script><!-- &\u2028' }).text;
    expect(text).not.toMatch(/[<>&\u2028]/);
    expect(JSON.parse(text)).toEqual({ x: '</script><!-- &\u2028' });
  });

  it('href encodes each query value and leaves out empty ones', () => {
    expect(href('/callback', { id: 'a&b=c d', since: '', n: 3 })).toBe('/callback?id=a%26b%3Dc+d&n=3');
    expect(href('/targets')).toBe('/targets');
  });
});
