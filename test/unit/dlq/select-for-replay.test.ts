import { describe, expect, it } from 'vitest';
import type { DlqEntry } from '../../../src/dlq/dlq-entry.js';
import { entryOrigin, selectForReplay, unmatchedIds } from '../../../src/dlq/select-for-replay.js';

const entry = (id: string | null, reason: string): DlqEntry => ({
  id,
  url: null,
  reason,
  attempts: null,
  lastStatus: null,
  lastError: null,
  since: null,
  ageSeconds: null,
});

describe('selectForReplay', () => {
  it('--all selects everything, id-less messages included', () => {
    expect(selectForReplay(entry(null, 'invalid'), { kind: 'all' })).toBe(true);
  });

  it('--reason compares the reason exactly', () => {
    expect(selectForReplay(entry('a', 'rejected'), { kind: 'reason', reason: 'rejected' })).toBe(true);
    expect(selectForReplay(entry('a', 'exhausted'), { kind: 'reason', reason: 'rejected' })).toBe(false);
    expect(selectForReplay(entry('a', 'delivery_limit'), { kind: 'reason', reason: 'delivery_limit' })).toBe(true);
    expect(selectForReplay(entry('a', 'Rejected'), { kind: 'reason', reason: 'rejected' })).toBe(false);
  });

  it('--id selects the listed ids only, never an id-less message', () => {
    const selector = { kind: 'ids', ids: ['a', 'b'] } as const;
    expect(selectForReplay(entry('a', 'rejected'), selector)).toBe(true);
    expect(selectForReplay(entry('c', 'rejected'), selector)).toBe(false);
    expect(selectForReplay(entry(null, 'invalid'), selector)).toBe(false);
  });
});

describe('entryOrigin: the origin a console group is of', () => {
  const at = (url: string | null): DlqEntry => ({ ...entry('a', 'exhausted'), url });

  it("is the URL's origin, or null without a usable URL", () => {
    expect(entryOrigin(at('https://a.example/hook?x=1'))).toBe('https://a.example');
    expect(entryOrigin(at('https://a.example:8443/hook'))).toBe('https://a.example:8443');
    expect(entryOrigin(at(null))).toBeNull();
    expect(entryOrigin(at('not a url'))).toBeNull();
  });
});

describe('unmatchedIds', () => {
  it('names the --ids no message had, once each', () => {
    expect(unmatchedIds({ kind: 'ids', ids: ['a', 'b', 'b', 'c'] }, ['a', null, 'x'])).toEqual(['b', 'c']);
    expect(unmatchedIds({ kind: 'ids', ids: ['a'] }, ['a'])).toEqual([]);
  });

  it('is empty for the other selectors', () => {
    expect(unmatchedIds({ kind: 'all' }, [])).toEqual([]);
    expect(unmatchedIds({ kind: 'reason', reason: 'rejected' }, [])).toEqual([]);
  });
});
