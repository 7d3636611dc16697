import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { registerActions } from '../../../src/console/action-routes.js';
import { ConsoleAuth } from '../../../src/console/auth.js';
import type { ConsoleActions } from '../../../src/console/console-actions.js';
import { buildConsoleApp, CONTENT_SECURITY_POLICY } from '../../../src/console/console-server.js';
import { ControlView } from '../../../src/console/control-view.js';
import { LoginThrottle } from '../../../src/console/login-throttle.js';
import { EndedSessions, sessionEndMarker } from '../../../src/console/session-ends.js';
import { EventWindow } from '../../../src/console/event-window.js';
import { registerPages } from '../../../src/console/page-routes.js';
import { startConsole } from '../../../src/console/start-console.js';
import { loadConfig } from '../../../src/config/load-config.js';
import type { PeekedDead } from '../../../src/dlq/list-dead.js';
import type { ShardKeys } from '../../../src/console/ordered-shards.js';
import { RelayError } from '../../../src/errors.js';
import type { DlqEntry } from '../../../src/dlq/dlq-entry.js';
import { topologyNames } from '../../../src/topology/topology-names.js';

const TOKEN = 'alice-Tk7-q9Zr2mX4vB8nW3pL6sD1';
const T0 = Date.parse('2026-01-31T12:00:00Z');

/** The app with its routes, the broker replaced by recorded calls: what the hooks let through. */
function consoleUnderTest(peeked: PeekedDead[] = [], shards: () => Promise<ShardKeys[]> = async () => []) {
  const config = loadConfig({ CONSOLE_TOKENS: `alice:${TOKEN}` });
  const clock = (): number => T0;
  const limits = { windowMs: 3_600_000, maxTargets: 10 };
  const sessions = new EndedSessions(clock);
  const live = {
    events: new EventWindow(limits, clock),
    control: new ControlView(limits, clock, 86_400_000),
    sessions,
    historyMissing: false,
    historyCaughtUp: true,
    close: async () => {},
  };
  const auth = new ConsoleAuth([{ name: 'alice', token: TOKEN }], clock, sessions);
  const calls: string[] = [];
  const actions: ConsoleActions = {
    pause: async (by, origin) => void calls.push(`pause ${origin} by ${by}`),
    resume: async () => {},
    cancel: async () => {},
    replay: async (by, ids, includeCanceled) => (
      calls.push(`replay ${ids.join(' ')} canceled=${includeCanceled} by ${by}`),
      { replayed: ids.length, skippedCanceled: 0 }
    ),
    purge: async (by, ids) => (calls.push(`purge ${ids.join(' ')} by ${by}`), ids.length),
    endSession: async (by, id, expires) => {
      calls.push(`end session of ${by}`);
      sessions.apply(sessionEndMarker(id, expires, T0));
    },
    peek: async () => ({ total: peeked.length + 5, messages: peeked }),
    orderedKeys: async () => shards(),
  };
  const throttle = new LoginThrottle({ perClient: 3, global: 5, windowMs: 60_000, maxClients: 100 }, clock);
  const logged: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write: (chunk: Buffer, _encoding, done) => void (logged.push(JSON.parse(chunk.toString()) as Record<string, unknown>), done()),
  });
  const app = buildConsoleApp(auth, pino({ level: 'info' }, sink), {
    throttle,
    endSession: (operator) => actions.endSession(operator.name, operator.sessionId ?? '', operator.expires ?? 0),
  });
  const context = { config, names: topologyNames('p'), live, actions, auth, clock };
  registerPages(app, context);
  registerActions(app, context);
  return { app, auth, live, calls, logged };
}

describe('console server', () => {
  it('refuses to start without CONSOLE_TOKENS, naming the key', async () => {
    const config = loadConfig({ AMQP_URL: 'amqp://127.0.0.1:1' });
    await expect(startConsole(config, pino({ level: 'silent' }), { port: 0 })).rejects.toMatchObject({
      code: 'CR_ERR_CONFIG',
      message: expect.stringContaining('CONSOLE_TOKENS (consoleTokens)'),
    });
  });

  it('sends a page only to an operator, with the strict CSP on every answer', async () => {
    const { app } = consoleUnderTest();
    const anonymous = await app.inject({ method: 'GET', url: '/targets' });
    expect(anonymous.statusCode).toBe(303);
    expect(anonymous.headers.location).toBe('/login?next=%2Ftargets');
    expect(anonymous.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(
      (
        await app.inject({
          method: 'POST',
          url: '/targets/pause',
          payload: 'origin=https://a.example',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        })
      ).statusCode,
    ).toBe(401);
    const bearer = await app.inject({ method: 'GET', url: '/targets', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(bearer.statusCode).toBe(200);
    expect(bearer.body).not.toMatch(/<script>|style="/);
  });

  it('Ordered keys: for an operator only, linked from every page, without a form of its own', async () => {
    const { app } = consoleUnderTest();
    const anonymous = await app.inject({ method: 'GET', url: '/ordered-keys' });
    expect(anonymous.statusCode).toBe(303);
    expect(anonymous.headers.location).toBe('/login?next=%2Fordered-keys');
    const targets = await app.inject({ method: 'GET', url: '/targets', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(targets.body).toContain('<a href="/ordered-keys" class="">Ordered keys</a>');
    const page = await app.inject({ method: 'GET', url: '/ordered-keys', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<a href="/ordered-keys" class="current">Ordered keys</a>');
    expect(page.body.match(/<form /g)).toHaveLength(1);
    expect(page.body).not.toContain('unavailable');
    expect((await app.inject({ method: 'POST', url: '/ordered-keys', headers: { authorization: `Bearer ${TOKEN}` } })).statusCode).toBe(
      404,
    );
  });

  it('Ordered keys: a broker that cannot be read is said on the page, not a failed request', async () => {
    const { app } = consoleUnderTest([], async () => {
      throw new RelayError('CR_ERR_BROKER_UNREACHABLE', 'no broker answered');
    });
    const page = await app.inject({ method: 'GET', url: '/ordered-keys', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('The shards&#39; logs are unavailable: no broker answered');
  });

  it('logs in with a token into an HttpOnly cookie, and redirects only within the console', async () => {
    const { app } = consoleUnderTest();
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const login = await app.inject({ method: 'POST', url: '/login', payload: `token=${TOKEN}&next=//evil.example/`, headers: form });
    expect(login.statusCode).toBe(303);
    expect(login.headers.location).toBe('/');
    expect(String(login.headers['set-cookie'])).toMatch(/^cr_console=alice\.\d+\.[\w-]{22}\.[\w-]{43}; HttpOnly; SameSite=Strict; Path=\//);
    const proxied = await app.inject({
      method: 'POST',
      url: '/login',
      payload: `token=${TOKEN}`,
      headers: { ...form, 'x-forwarded-proto': 'https' },
    });
    expect(String(proxied.headers['set-cookie'])).toMatch(/; Secure$/);
    const wrong = await app.inject({ method: 'POST', url: '/login', payload: 'token=nope', headers: form });
    expect(wrong.headers.location).toContain('failed=1');
    expect(wrong.headers['set-cookie']).toBeUndefined();
  });

  it('acts on a cookie session only with its CSRF token', async () => {
    const { app, auth, calls, live } = consoleUnderTest();
    const session = auth.newSession({ name: 'alice', token: TOKEN });
    const operator = auth.fromSession(session);
    if (!operator) throw new Error('no session');
    const headers = { cookie: `cr_console=${session}`, 'content-type': 'application/x-www-form-urlencoded' };
    const forged = await app.inject({ method: 'POST', url: '/targets/pause', payload: 'origin=https://a.example', headers });
    expect(forged.statusCode).toBe(403);
    expect(calls).toEqual([]);
    const csrf = auth.csrfToken(operator);
    const page = await app.inject({ method: 'GET', url: '/targets', headers });
    live.control.apply({ type: 'pause', origin: 'https://held.example', at: new Date(T0).toISOString() });
    expect(page.body).toContain('/logout');
    const done = await app.inject({
      method: 'POST',
      url: '/targets/pause',
      payload: `origin=https%3A%2F%2Fa.example&csrf=${csrf}`,
      headers,
    });
    expect(done.statusCode).toBe(303);
    expect(done.headers.location).toBe('/targets?done=paused');
    expect(calls).toEqual(['pause https://a.example by alice']);
    const spoofed = await app.inject({ method: 'GET', url: '/dead-letters?done=replayed&n=all%20of%20them&skipped=0', headers });
    expect(spoofed.body).toContain('Replayed ? message(s); 0 canceled left');
    const targets = await app.inject({ method: 'GET', url: '/targets', headers });
    expect(targets.body).toContain(`name="csrf" value="${csrf}"`);
    expect(targets.body).toContain('data-origin="https://held.example"');
  });

  it('refuses a weak token at start, naming CONSOLE_TOKENS, the rule and the name, never the token', async () => {
    for (const weak of [
      'short-token-0123456',
      'local-console-token-change-me',
      'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      '012345678901234567890123456789012345',
    ]) {
      const config = loadConfig({ AMQP_URL: 'amqp://127.0.0.1:1', CONSOLE_TOKENS: `good:${TOKEN},bob:${weak}` });
      const started = startConsole(config, pino({ level: 'silent' }), { port: 0 });
      await expect(started).rejects.toMatchObject({
        code: 'CR_ERR_CONFIG',
        message: expect.stringContaining('CONSOLE_TOKENS (consoleTokens): the token of bob is too weak'),
      });
      await expect(started).rejects.toMatchObject({ message: expect.stringContaining('128 bits') });
      await expect(started).rejects.toMatchObject({ message: expect.not.stringContaining(weak) });
    }
  });

  it('throttles wrong tokens per client address: 429 with Retry-After, a warn line to alert on; the right token is refused too meanwhile', async () => {
    const { app, logged } = consoleUnderTest();
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const wrong = (remoteAddress = '10.0.0.1') =>
      app.inject({ method: 'POST', url: '/login', payload: 'token=nope-nope-nope-nope-nope', headers: form, remoteAddress });
    for (let i = 0; i < 3; i += 1) expect((await wrong()).statusCode).toBe(303);
    const refused = await wrong();
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    const right = await app.inject({ method: 'POST', url: '/login', payload: `token=${TOKEN}`, headers: form, remoteAddress: '10.0.0.1' });
    expect(right.statusCode).toBe(429);
    const bearer = await app.inject({
      method: 'GET',
      url: '/targets',
      headers: { authorization: `Bearer ${TOKEN}` },
      remoteAddress: '10.0.0.1',
    });
    expect(bearer.statusCode).toBe(429);
    expect(logged.filter((line) => line.event === 'console.login.throttled')).toEqual([
      expect.objectContaining({ level: 40, scope: 'client', client: '10.0.0.1', retryAfterSeconds: 60, limit: 3 }),
    ]);
    // Another address still logs in; a wrong bearer token counts as a failure too, up to the global ceiling.
    expect(
      (await app.inject({ method: 'POST', url: '/login', payload: `token=${TOKEN}`, headers: form, remoteAddress: '10.0.0.2' })).statusCode,
    ).toBe(303);
    expect(
      (await app.inject({ method: 'GET', url: '/targets', headers: { authorization: 'Bearer nope-nope' }, remoteAddress: '10.0.0.3' }))
        .statusCode,
    ).toBe(303);
    expect((await wrong('10.0.0.4')).statusCode).toBe(303);
    expect((await wrong('10.0.0.5')).statusCode).toBe(429);
    expect(logged.filter((line) => line.event === 'console.login.throttled').at(-1)).toMatchObject({ scope: 'global' });
  });

  it('a logout ends the session: the same cookie is refused afterwards', async () => {
    const { app, auth, calls } = consoleUnderTest();
    const session = auth.newSession({ name: 'alice', token: TOKEN });
    const operator = auth.fromSession(session);
    if (!operator) throw new Error('no session');
    const headers = { cookie: `cr_console=${session}`, 'content-type': 'application/x-www-form-urlencoded' };
    expect((await app.inject({ method: 'GET', url: '/targets', headers })).statusCode).toBe(200);
    const out = await app.inject({ method: 'POST', url: '/logout', payload: `csrf=${auth.csrfToken(operator)}`, headers });
    expect(out.statusCode).toBe(303);
    expect(String(out.headers['set-cookie'])).toContain('Max-Age=0');
    expect(calls).toEqual(['end session of alice']);
    expect((await app.inject({ method: 'GET', url: '/targets', headers })).statusCode).toBe(303);
  });

  it('after a login, redirects only to a path of the console', async () => {
    const { app } = consoleUnderTest();
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const hostile = [
      '/%09/evil.example/',
      '/\t/evil.example/',
      '//evil',
      '/\\evil',
      '/\\/evil',
      'https://evil',
      'http:evil',
      '%2F%2Fevil',
      '/.//evil',
      '//%2Fevil',
      ' //evil',
      'javascript:alert(1)',
    ];
    for (const next of hostile) {
      const login = await app.inject({
        method: 'POST',
        url: '/login',
        payload: new URLSearchParams({ token: TOKEN, next }).toString(),
        headers: form,
      });
      const location = String(login.headers.location);
      expect(
        location.startsWith('/') && !location.startsWith('//') && !location.includes('\\'),
        `${JSON.stringify(next)} → ${location}`,
      ).toBe(true);
      expect(new URL(location, 'http://console.test').origin).toBe('http://console.test');
    }
    const kept = await app.inject({
      method: 'POST',
      url: '/login',
      payload: new URLSearchParams({ token: TOKEN, next: '/dead-letters?reason=exhausted' }).toString(),
      headers: form,
    });
    expect(kept.headers.location).toBe('/dead-letters?reason=exhausted');
  });

  it('replay and purge post the ids shown and their count; ticked ones include canceled, a group only when asked', async () => {
    const { app, auth, calls } = consoleUnderTest();
    const session = auth.newSession({ name: 'alice', token: TOKEN });
    const operator = auth.fromSession(session);
    if (!operator) throw new Error('no session');
    const headers = { cookie: `cr_console=${session}`, 'content-type': 'application/x-www-form-urlencoded' };
    const post = (url: string, fields: Array<[string, string]>) =>
      app.inject({
        method: 'POST',
        url,
        payload: new URLSearchParams([...fields, ['csrf', auth.csrfToken(operator)]]).toString(),
        headers,
      });
    expect(
      (
        await post('/dead-letters/replay', [
          ['id', 'a'],
          ['id', 'b'],
          ['count', '2'],
        ])
      ).headers.location,
    ).toBe('/dead-letters?done=replayed&n=2&skipped=0');
    await post('/dead-letters/replay', [
      ['id', 'c'],
      ['count', '1'],
      ['canceled', '1'],
    ]);
    await post('/dead-letters/replay', [
      ['id', 'd'],
      ['selected', '1'],
    ]);
    expect(
      (
        await post('/dead-letters/replay', [
          ['id', 'a'],
          ['id', 'b'],
          ['count', '3'],
        ])
      ).statusCode,
    ).toBe(400);
    expect((await post('/dead-letters/replay', [['count', '0']])).statusCode).toBe(400);
    expect(
      (
        await post('/dead-letters/purge', [
          ['id', 'a'],
          ['id', 'a'],
          ['count', '2'],
        ])
      ).headers.location,
    ).toBe('/dead-letters?done=purged&n=2');
    expect((await post('/dead-letters/purge', [['id', 'a']])).statusCode).toBe(400);
    expect(calls).toEqual([
      'replay a b canceled=false by alice',
      'replay c canceled=true by alice',
      'replay d canceled=true by alice',
      'purge a a by alice',
    ]);
  });

  it('the dead-letters and purge pages post exactly the ids they show, with their count; canceled ones need a tick', async () => {
    const entry = (id: string | null, reason: string): PeekedDead => {
      const e: DlqEntry = {
        id,
        url: 'https://a.example/x',
        reason,
        attempts: 1,
        lastStatus: 500,
        lastError: null,
        since: null,
        ageSeconds: null,
      };
      return { entry: e, content: Buffer.from('{}'), headers: {} };
    };
    const { app } = consoleUnderTest([entry('cb-1', 'exhausted'), entry('cb-2', 'canceled'), entry(null, 'invalid')]);
    const headers = { authorization: `Bearer ${TOKEN}` };
    const page = (await app.inject({ method: 'GET', url: '/dead-letters', headers })).body;
    const all = /<form[^>]*class="inline replay-all"[^]*?<\/form>/.exec(page)?.[0] ?? '';
    expect(all).toContain('name="count" value="2"');
    expect(all.match(/name="id" value="[^"]+"/g)).toEqual(['name="id" value="cb-1"', 'name="id" value="cb-2"']);
    expect(all).toContain('name="canceled" value="1"> include the 1 canceled');
    expect(all).toContain('Replay all 2 shown');
    const purge = (await app.inject({ method: 'GET', url: '/dead-letters/purge', headers })).body;
    expect(purge).toContain('<strong id="purge-count">2</strong>');
    expect(purge).toContain('the other 5 not looked at');
    expect(purge).toContain('the 1 without a callback id');
    expect(purge.match(/name="id" value="[^"]+"/g)).toEqual(['name="id" value="cb-1"', 'name="id" value="cb-2"']);
  });
});
