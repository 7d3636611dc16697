import { describe, expect, it } from 'vitest';
import { createKeyRecord } from '../../../src/ingest/key-record.js';

describe('createKeyRecord', () => {
  it("knows a key's first content: the same again is a retry, other content a conflict", () => {
    const record = createKeyRecord({ windowMs: 1_000, maxKeys: 10, now: () => 0 });
    expect(record.claim('acme:k', 'd1')).toBe('new');
    expect(record.claim('acme:k', 'd1')).toBe('same');
    expect(record.claim('acme:k', 'd2')).toBe('conflict');
    expect(record.claim('other:k', 'd2')).toBe('new');
    expect(record.size()).toBe(2);
  });

  it('forgets a key on demand: a callback refused as invalid leaves its key free', () => {
    const record = createKeyRecord({ windowMs: 1_000, maxKeys: 10, now: () => 0 });
    record.claim('a', 'd1');
    record.forget('a');
    expect(record.claim('a', 'd2')).toBe('new');
  });

  it('forgets a key once the window since it was first seen has passed', () => {
    let now = 0;
    const record = createKeyRecord({ windowMs: 1_000, maxKeys: 10, now: () => now });
    record.claim('a', 'd1');
    now = 999;
    expect(record.claim('a', 'd2')).toBe('conflict');
    now = 1_000;
    expect(record.claim('a', 'd2')).toBe('new');
    expect(record.size()).toBe(1);
  });

  it('holds at most maxKeys, forgetting the oldest first', () => {
    const record = createKeyRecord({ windowMs: 1_000, maxKeys: 3, now: () => 0 });
    for (const key of ['a', 'b', 'c', 'd']) record.claim(key, 'd');
    expect(record.size()).toBe(3);
    expect(record.claim('a', 'other')).toBe('new');
    expect(record.claim('d', 'other')).toBe('conflict');
    expect(record.size()).toBe(3);
  });
});
