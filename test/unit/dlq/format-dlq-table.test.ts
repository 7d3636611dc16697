import { describe, expect, it } from 'vitest';
import type { DlqEntry } from '../../../src/dlq/dlq-entry.js';
import { formatAge, formatDlqTable } from '../../../src/dlq/format-dlq-table.js';

const entry = (over: Partial<DlqEntry> = {}): DlqEntry => ({
  id: 'order-42',
  url: 'https://example.com/hook',
  reason: 'rejected',
  attempts: 1,
  lastStatus: 404,
  lastError: 'HTTP 404',
  since: '2025-06-01T11:58:30.000Z',
  ageSeconds: 90,
  ...over,
});

describe('formatDlqTable', () => {
  it('aligns the columns under their titles, with a footer', () => {
    const text = formatDlqTable(
      [
        entry(),
        entry({ id: 'a-much-longer-id', reason: 'delivery_limit', attempts: null, lastStatus: null, lastError: null, ageSeconds: null }),
      ],
      2,
      'cr.dead',
    );
    expect(text.split('\n')).toEqual([
      'ID                URL                       REASON          ATTEMPTS  STATUS  AGE  LAST ERROR',
      'order-42          https://example.com/hook  rejected        1         404     1m   HTTP 404',
      'a-much-longer-id  https://example.com/hook  delivery_limit  -         -       -    -',
      '',
      '2 messages in cr.dead',
    ]);
  });

  it('says when --limit cut the listing, and when the queue is empty', () => {
    expect(formatDlqTable([entry()], 120, 'cr.dead').split('\n').at(-1)).toBe('1 of 120 messages in cr.dead (raise --limit to see more)');
    expect(formatDlqTable([entry()], 1, 'cr.dead').split('\n').at(-1)).toBe('1 message in cr.dead');
    expect(formatDlqTable([], 0, 'cr.dead')).toBe('cr.dead is empty');
  });

  it('neutralises control characters and cuts over-long cells', () => {
    const text = formatDlqTable([entry({ url: `http://x/\u001b[31m${'p'.repeat(100)}`, lastError: 'line1\nline2' })], 1, 'q');
    expect(text).not.toContain('\u001b');
    expect(text).toContain('line1 line2');
    const row = text.split('\n')[1] ?? '';
    expect(row).toContain('…');
    expect(row).not.toContain('p'.repeat(60));
  });
});

describe('formatAge', () => {
  it('is compact and coarse', () => {
    expect(formatAge(0)).toBe('0s');
    expect(formatAge(59)).toBe('59s');
    expect(formatAge(60)).toBe('1m');
    expect(formatAge(3599)).toBe('59m');
    expect(formatAge(3600 + 5 * 60)).toBe('1h05m');
    expect(formatAge(2 * 86_400 + 5 * 3600 + 59)).toBe('2d5h');
    expect(formatAge(-5)).toBe('0s');
  });
});
