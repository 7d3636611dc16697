import { describe, expect, it } from 'vitest';
import { ConsoleAuth, readCookie, SESSION_MS } from '../../../src/console/auth.js';
import { EndedSessions, sessionEndMarker } from '../../../src/console/session-ends.js';

const alice = { name: 'alice', token: 'alice-token-0123456789' };
const bob = { name: 'bob', token: 'bob-token-0123456789ab' };

describe('ConsoleAuth', () => {
  it('a bearer token names its operator; anything else names nobody', () => {
    const auth = new ConsoleAuth([alice, bob], () => 0);
    expect(auth.fromBearer(`Bearer ${bob.token}`)).toEqual({ name: 'bob', via: 'bearer' });
    expect(auth.fromBearer(`Bearer ${bob.token}x`)).toBeUndefined();
    expect(auth.fromBearer(bob.token)).toBeUndefined();
    expect(auth.fromBearer(undefined)).toBeUndefined();
  });

  it('a session cookie is valid on any replica with the same tokens, until it expires or its token is removed', () => {
    let now = 1_000;
    const auth = new ConsoleAuth([alice, bob], () => now);
    const cookie = auth.newSession(alice);
    expect(cookie).not.toContain(alice.token);
    expect(new ConsoleAuth([bob, alice], () => now).fromSession(cookie)).toMatchObject({ name: 'alice', via: 'cookie' });
    expect(new ConsoleAuth([bob], () => now).fromSession(cookie)).toBeUndefined();
    expect(new ConsoleAuth([{ name: 'alice', token: 'another-token-0123456789' }], () => now).fromSession(cookie)).toBeUndefined();
    expect(auth.fromSession(cookie.replace('alice', 'bob'))).toBeUndefined();
    const [name, expires, id, mac] = cookie.split('.');
    expect(auth.fromSession(`${name}.${Number(expires) + 1}.${id}.${mac}`)).toBeUndefined();
    expect(auth.fromSession(`${name}.${expires}.${'A'.repeat(22)}.${mac}`)).toBeUndefined();
    now += SESSION_MS + 1;
    expect(auth.fromSession(cookie)).toBeUndefined();
  });

  it('rotating a token ends the sessions made with it, on every replica; the other operators keep theirs', () => {
    const now = 1_000;
    const before = new ConsoleAuth([alice, bob], () => now);
    const aliceCookie = before.newSession(alice);
    const bobCookie = before.newSession(bob);
    const rotated = new ConsoleAuth([{ name: 'alice', token: 'alice-rotated-token-0123456789' }, bob], () => now);
    expect(rotated.fromSession(aliceCookie)).toBeUndefined();
    expect(rotated.fromSession(bobCookie)).toMatchObject({ name: 'bob' });
  });

  it('a session ended by a logout is refused, and only that one', () => {
    const ended = new EndedSessions(() => 1_000);
    const auth = new ConsoleAuth([alice], () => 1_000, ended);
    const first = auth.newSession(alice);
    const second = auth.newSession(alice);
    expect(first).not.toBe(second);
    const operator = auth.fromSession(first);
    if (operator?.sessionId === undefined || operator.expires === undefined) throw new Error('no session id');
    expect(operator.expires).toBe(1_000 + SESSION_MS);
    ended.apply(sessionEndMarker(operator.sessionId, operator.expires, 1_000));
    expect(auth.fromSession(first)).toBeUndefined();
    expect(auth.fromSession(second)).toMatchObject({ name: 'alice' });
  });

  it("a POST of a session needs that session's CSRF token; a bearer request needs none", () => {
    const auth = new ConsoleAuth([alice, bob], () => 0);
    const session = auth.fromSession(auth.newSession(alice));
    const other = auth.fromSession(auth.newSession(bob));
    if (!session || !other) throw new Error('no session');
    const csrf = auth.csrfToken(session);
    expect(csrf.length).toBeGreaterThan(20);
    expect(auth.csrfOk(session, csrf)).toBe(true);
    expect(auth.csrfOk(session, undefined)).toBe(false);
    expect(auth.csrfOk(session, '')).toBe(false);
    expect(auth.csrfOk(session, auth.csrfToken(other))).toBe(false);
    expect(auth.csrfOk({ name: 'alice', via: 'bearer' }, undefined)).toBe(true);
  });

  it('readCookie finds one cookie among several', () => {
    expect(readCookie('a=1; cr_console=x.y.z; b=2', 'cr_console')).toBe('x.y.z');
    expect(readCookie('a=1', 'cr_console')).toBeUndefined();
    expect(readCookie(undefined, 'cr_console')).toBeUndefined();
  });
});
