import { describe, expect, it } from 'vitest';
import { filterFromQuery, groupDead, matchesFilter } from '../../../src/console/dead-groups.js';
import type { DlqEntry } from '../../../src/dlq/dlq-entry.js';

const entry = (id: string | null, url: string | null, reason: string, since: string | null): DlqEntry => ({
  id,
  url,
  reason,
  attempts: 1,
  lastStatus: 500,
  lastError: null,
  since,
  ageSeconds: 0,
});

const ENTRIES = [
  entry('a-1', 'https://a.example/hook', 'exhausted', '2026-01-31T10:00:00.000Z'),
  entry('a-2', 'https://a.example/other', 'exhausted', '2026-01-31T11:00:00.000Z'),
  entry('a-3', 'https://a.example/hook', 'rejected', '2026-01-31T12:00:00.000Z'),
  entry('b-1', 'https://b.example/', 'exhausted', null),
  entry(null, null, 'invalid', null),
];

describe('dead-letter groups and filters', () => {
  it('groups by origin and reason, the largest group first, with its newest time', () => {
    expect(groupDead(ENTRIES)).toEqual([
      { origin: 'https://a.example', reason: 'exhausted', count: 2, newest: '2026-01-31T11:00:00.000Z' },
      { origin: null, reason: 'invalid', count: 1, newest: null },
      { origin: 'https://a.example', reason: 'rejected', count: 1, newest: '2026-01-31T12:00:00.000Z' },
      { origin: 'https://b.example', reason: 'exhausted', count: 1, newest: null },
    ]);
  });

  it('filters by part of the id or URL, the exact reason, and a time range', () => {
    const ids = (query: Record<string, string>): Array<string | null> =>
      ENTRIES.filter((e) => matchesFilter(e, filterFromQuery(query))).map((e) => e.id);
    expect(ids({})).toHaveLength(5);
    expect(ids({ id: 'A-' })).toEqual(['a-1', 'a-2', 'a-3']);
    expect(ids({ url: 'a.example/hook' })).toEqual(['a-1', 'a-3']);
    expect(ids({ reason: 'exhausted' })).toEqual(['a-1', 'a-2', 'b-1']);
    expect(ids({ reason: 'exhaust' })).toEqual([]);
    expect(ids({ from: '2026-01-31T10:30Z', to: '2026-01-31T12:00Z' })).toEqual(['a-2']);
    expect(ids({ from: 'yesterday' })).toHaveLength(5);
  });
});
