import { describe, expect, it } from 'vitest';
import { encodeMarker, originOf, parseMarker, type ControlMarker } from '../../../src/control/control-markers.js';
import { ControlState } from '../../../src/control/control-state.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (ms: number): string => new Date(T0 + ms).toISOString();

function stateAt(now: { ms: number }, limits = { maxCancelled: 3, maxAgeMs: 60_000 }): ControlState {
  return new ControlState(limits, () => T0 + now.ms);
}

describe('ControlState: pauses outlive the stream retention', () => {
  const O = 'https://partner.example';

  it('lists a pause whose newest marker is older than the renewal age, with its since and by; a newer marker renews it', () => {
    const now = { ms: 10_000 };
    const state = stateAt(now);
    state.apply({ type: 'pause', origin: O, at: at(0), by: 'auto-pause' });
    expect(state.pausesToRenew(5_000)).toEqual([{ origin: O, since: at(0), by: 'auto-pause' }]);
    state.apply({ type: 'pause', origin: O, at: at(9_000), since: at(0), by: 'auto-pause' });
    expect(state.pausesToRenew(5_000)).toEqual([]);
    expect(state.pausedOrigins()).toEqual([{ origin: O, since: at(0), by: 'auto-pause' }]);
  });

  it('a worker that reads only the renewal (the first marker aged out) holds the pause, since its first time', () => {
    const state = stateAt({ ms: 40 * 86_400_000 });
    state.apply({ type: 'pause', origin: O, at: at(20 * 86_400_000), since: at(0), by: 'operator' });
    expect(state.isPaused(O)).toBe(true);
    expect(state.pausedOrigins()).toEqual([{ origin: O, since: at(0), by: 'operator' }]);
  });

  it('a renewal stored after the resume of its pause does not pause the origin again; a later pause does', () => {
    const state = stateAt({ ms: 100 });
    state.apply({ type: 'pause', origin: O, at: at(0) });
    state.apply({ type: 'resume', origin: O, at: at(50) });
    state.apply({ type: 'pause', origin: O, at: at(51), since: at(0) });
    expect(state.isPaused(O)).toBe(false);
    state.apply({ type: 'pause', origin: O, at: at(60) });
    expect(state.isPaused(O)).toBe(true);
  });

  it('the renewal round-trips through the wire format', () => {
    const marker: ControlMarker = { type: 'pause', origin: O, at: at(5), by: 'auto-pause', since: at(0) };
    expect(parseMarker(encodeMarker(marker))).toEqual(marker);
  });
});

describe('ControlState', () => {
  it('remembers cancelled ids', () => {
    const state = stateAt({ ms: 0 });
    state.apply({ type: 'cancel', id: 'a', at: at(0) });
    expect(state.isCancelled('a')).toBe(true);
    expect(state.isCancelled('b')).toBe(false);
  });

  it('a callback replayed after its cancel is not cancelled by it; one replayed before is', () => {
    const state = stateAt({ ms: 100 });
    state.apply({ type: 'cancel', id: 'a', at: at(50) });
    expect(state.isCancelled('a', T0 + 60)).toBe(false);
    expect(state.isCancelled('a', T0 + 40)).toBe(true);
  });

  it('keeps at most maxCancelled ids, forgetting the oldest first', () => {
    const state = stateAt({ ms: 10 });
    for (const [i, id] of ['a', 'b', 'c', 'd'].entries()) state.apply({ type: 'cancel', id, at: at(i) });
    expect(state.cancelledCount).toBe(3);
    expect(state.isCancelled('a')).toBe(false);
    expect(['b', 'c', 'd'].every((id) => state.isCancelled(id))).toBe(true);
  });

  it('a cancel sent again counts from its latest marker', () => {
    const now = { ms: 0 };
    const state = stateAt(now);
    state.apply({ type: 'cancel', id: 'a', at: at(0) });
    state.apply({ type: 'cancel', id: 'b', at: at(1) });
    state.apply({ type: 'cancel', id: 'a', at: at(2) });
    state.apply({ type: 'cancel', id: 'c', at: at(3) });
    state.apply({ type: 'cancel', id: 'd', at: at(4) });
    expect(state.isCancelled('b')).toBe(false);
    expect(state.isCancelled('a')).toBe(true);
  });

  it('forgets a cancel older than maxAgeMs, as the stream does', () => {
    const now = { ms: 0 };
    const state = stateAt(now);
    state.apply({ type: 'cancel', id: 'old', at: at(0) });
    now.ms = 60_000;
    expect(state.isCancelled('old')).toBe(true);
    now.ms = 60_001;
    expect(state.isCancelled('old')).toBe(false);
    expect(state.cancelledCount).toBe(0);
  });

  it('drops expired ids when a new cancel arrives, read from the stream start', () => {
    const now = { ms: 120_000 };
    const state = stateAt(now, { maxCancelled: 100, maxAgeMs: 60_000 });
    state.apply({ type: 'cancel', id: 'expired', at: at(0) });
    state.apply({ type: 'cancel', id: 'recent', at: at(100_000) });
    expect(state.cancelledCount).toBe(1);
    expect(state.isCancelled('recent')).toBe(true);
  });

  it('pauses an origin until its resume; the first pause is the one that counts, with who wrote it', () => {
    const state = stateAt({ ms: 0 });
    state.apply({ type: 'pause', origin: 'https://a.example', at: at(0), by: 'auto-pause' });
    state.apply({ type: 'pause', origin: 'https://a.example', at: at(5), by: 'operator' });
    state.apply({ type: 'pause', origin: 'https://b.example', at: at(7) });
    expect(state.isPaused('https://a.example')).toBe(true);
    expect(state.pausedOrigins()).toEqual([
      { origin: 'https://a.example', since: at(0), by: 'auto-pause' },
      { origin: 'https://b.example', since: at(7), by: null },
    ]);
    state.apply({ type: 'resume', origin: 'https://a.example', at: at(9) });
    expect(state.isPaused('https://a.example')).toBe(false);
    expect(state.isPaused('https://b.example')).toBe(true);
  });
});

describe('control markers', () => {
  it('round-trips every marker type', () => {
    const markers: ControlMarker[] = [
      { type: 'cancel', id: 'cb-1', at: at(0) },
      { type: 'pause', origin: 'https://a.example', at: at(1) },
      { type: 'pause', origin: 'https://a.example', at: at(1), by: 'operator' },
      { type: 'pause', origin: 'https://a.example', at: at(1), by: 'auto-pause' },
      { type: 'resume', origin: 'https://a.example', at: at(2) },
      { type: 'sync', nonce: 'n1', at: at(3) },
    ];
    for (const marker of markers) expect(parseMarker(encodeMarker(marker))).toEqual(marker);
  });

  it('a pause whose `by` it does not know is still a pause, without `by`', () => {
    expect(parseMarker(Buffer.from('{"type":"pause","origin":"https://a.example","at":"2026-01-01T00:00:00Z","by":"cron"}'))).toEqual({
      type: 'pause',
      origin: 'https://a.example',
      at: '2026-01-01T00:00:00Z',
    });
  });

  it('skips what is not a usable marker', () => {
    for (const text of [
      'not json',
      '[]',
      'null',
      '{"type":"cancel","at":"2026-01-01T00:00:00Z"}',
      '{"type":"cancel","id":"a"}',
      '{"type":"cancel","id":"a","at":"yesterday"}',
      '{"type":"drop","id":"a","at":"2026-01-01T00:00:00Z"}',
      '{"type":"pause","origin":"","at":"2026-01-01T00:00:00Z"}',
    ]) {
      expect(parseMarker(Buffer.from(text))).toBeUndefined();
    }
  });

  it('takes an origin, never a URL with a path', () => {
    expect(originOf('https://a.example')).toBe('https://a.example');
    expect(originOf('https://a.example/')).toBe('https://a.example');
    expect(originOf('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
    expect(originOf('https://a.example/hook')).toBeUndefined();
    expect(originOf('a.example')).toBeUndefined();
  });
});

describe('ControlState: limits', () => {
  const O = 'https://partner.example';

  it('reads limit and clear markers; the newest of an origin wins whatever the order stored; a bad limit is skipped', () => {
    const state = stateAt({ ms: 100 });
    const set: ControlMarker = { type: 'limit', origin: O, at: at(10), limit: { rate: 20, burst: 5 } };
    state.apply(parseMarker(encodeMarker(set))!);
    expect(state.limitOf(O)).toEqual({ rate: 20, burst: 5 });
    state.apply({ type: 'limit', origin: O, at: at(5), limit: { rate: 1 } });
    expect(state.limitOf(O)).toEqual({ rate: 20, burst: 5 });
    state.apply(parseMarker(encodeMarker({ type: 'limit', origin: O, at: at(20), limit: null }))!);
    expect(state.originLimits()).toEqual([{ origin: O, limit: null, at: at(20) }]);
    expect(parseMarker(Buffer.from(JSON.stringify({ type: 'limit', origin: O, at: at(30), limit: { rate: -1 } })))).toBeUndefined();
    expect(parseMarker(Buffer.from(JSON.stringify({ type: 'limit', origin: O, at: at(30) })))).toBeUndefined();
  });

  it('a limit whose marker is older than the renewal age is written again; a cleared one is not', () => {
    const now = { ms: 10_000 };
    const state = stateAt(now);
    state.apply({ type: 'limit', origin: O, at: at(0), limit: { concurrency: 2 } });
    state.apply({ type: 'limit', origin: 'https://b.example', at: at(0), limit: null });
    expect(state.limitsToRenew(5_000)).toEqual([{ origin: O, limit: { concurrency: 2 }, at: at(0) }]);
  });

  it('a back-off marker is news, not state', () => {
    const backoff = parseMarker(encodeMarker({ type: 'backoff', target: O, factor: 0.5, until: at(2_000), from: 'w1', at: at(0) }));
    expect(backoff).toEqual({ type: 'backoff', target: O, factor: 0.5, until: at(2_000), from: 'w1', at: at(0) });
    expect(
      parseMarker(Buffer.from(JSON.stringify({ type: 'backoff', target: O, factor: 2, until: at(1), from: 'w', at: at(0) }))),
    ).toBeUndefined();
  });
});
