import { describe, expect, it } from 'vitest';
import { parseMarker } from '../../../src/control/control-markers.js';
import { EndedSessions, parseSessionEnd, sessionEndMarker } from '../../../src/console/session-ends.js';

const encode = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

describe('session ends', () => {
  it('a marker ends its session until the session would have expired, then is forgotten', () => {
    let now = 1_000;
    const ended = new EndedSessions(() => now);
    const marker = parseSessionEnd(encode(sessionEndMarker('s1-aaaaaaaaaaaaaaaaaaa', 5_000, now)));
    if (marker === undefined) throw new Error('not parsed');
    expect(JSON.stringify(marker)).not.toContain('s1-aaaaaaaaaaaaaaaaaaa');
    ended.apply(marker);
    expect(ended.has('s1-aaaaaaaaaaaaaaaaaaa')).toBe(true);
    expect(ended.has('s2-aaaaaaaaaaaaaaaaaaa')).toBe(false);
    now = 5_000;
    expect(ended.has('s1-aaaaaaaaaaaaaaaaaaa')).toBe(false);
    ended.apply(marker);
    expect(ended.size).toBe(1);
  });

  it('keeps at most its bound, dropping those expiring soonest', () => {
    const ended = new EndedSessions(() => 0, 3);
    for (let i = 1; i <= 10; i += 1) ended.apply(sessionEndMarker(`s${i}`, i * 1_000, 0));
    expect(ended.size).toBe(3);
    expect(ended.has('s10')).toBe(true);
    expect(ended.has('s1')).toBe(false);
  });

  it('reads only well-formed markers; a worker reading P.control skips them', () => {
    const marker = sessionEndMarker('s1', 5_000, 1_000);
    expect(parseMarker(encode(marker))).toBeUndefined();
    expect(parseSessionEnd(encode({ type: 'cancel', id: 'x', at: marker.at }))).toBeUndefined();
    expect(parseSessionEnd(encode({ ...marker, session: 'short' }))).toBeUndefined();
    expect(parseSessionEnd(encode({ ...marker, until: 'never' }))).toBeUndefined();
    expect(parseSessionEnd(Buffer.from('not json'))).toBeUndefined();
    expect(parseSessionEnd(encode(null))).toBeUndefined();
  });
});
