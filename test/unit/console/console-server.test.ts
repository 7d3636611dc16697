import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { registerActions } from '../../../src/console/action-routes.js';
import { ConsoleAuth } from '../../../src/console/auth.js';
import type { ConsoleActions } from '../../../src/console/console-actions.js';
import { buildConsoleApp, CONTENT_SECURITY_POLICY } from '../../../src/console/console-server.js';
import { ControlView } from '../../../src/console/control-view.js';
import { EventWindow } from '../../../src/console/event-window.js';
import { registerPages } from '../../../src/console/page-routes.js';
import { startConsole } from '../../../src/console/start-console.js';
import { loadConfig } from '../../../src/config/load-config.js';
import { topologyNames } from '../../../src/topology/topology-names.js';

const TOKEN = 'alice-token-0123456789';
const T0 = Date.parse('2026-01-31T12:00:00Z');

/** The app with its routes, the broker replaced by recorded calls: what the hooks let through. */
function consoleUnderTest() {
  const config = loadConfig({ CONSOLE_TOKENS: `alice:${TOKEN}` });
  const clock = (): number => T0;
  const auth = new ConsoleAuth([{ name: 'alice', token: TOKEN }], clock);
  const limits = { windowMs: 3_600_000, maxTargets: 10 };
  const live = { events: new EventWindow(limits, clock), control: new ControlView(limits, clock, 86_400_000), historyMissing: false, historyCaughtUp: true, close: async () => {} };
  const calls: string[] = [];
  const actions: ConsoleActions = {
    pause: async (by, origin) => void calls.push(`pause ${origin} by ${by}`),
    resume: async () => {},
    cancel: async () => {},
    replay: async () => ({ replayed: 0, kept: 0, examined: 0, notFound: [], movedToTail: 0 }),
    purge: async () => 0,
    peek: async () => ({ total: 0, messages: [] }),
  };
  const app = buildConsoleApp(auth, pino({ level: 'silent' }));
  const context = { config, names: topologyNames('p'), live, actions, auth, clock };
  registerPages(app, context);
  registerActions(app, context);
  return { app, auth, live, calls };
}

describe('console server', () => {
  it('refuses to start without CONSOLE_TOKENS, naming the key', async () => {
    const config = loadConfig({ AMQP_URL: 'amqp://127.0.0.1:1' });
    await expect(startConsole(config, pino({ level: 'silent' }), 0)).rejects.toMatchObject({ code: 'CR_ERR_CONFIG', message: expect.stringContaining('CONSOLE_TOKENS (consoleTokens)') });
  });

  it('sends a page only to an operator, with the strict CSP on every answer', async () => {
    const { app } = consoleUnderTest();
    const anonymous = await app.inject({ method: 'GET', url: '/targets' });
    expect(anonymous.statusCode).toBe(303);
    expect(anonymous.headers.location).toBe('/login?next=%2Ftargets');
    expect(anonymous.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect((await app.inject({ method: 'POST', url: '/targets/pause', payload: 'origin=https://a.example', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).statusCode).toBe(401);
    const bearer = await app.inject({ method: 'GET', url: '/targets', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(bearer.statusCode).toBe(200);
    expect(bearer.body).not.toMatch(/<script>|style="/);
  });

  it('logs in with a token into an HttpOnly cookie, and redirects only within the console', async () => {
    const { app } = consoleUnderTest();
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const login = await app.inject({ method: 'POST', url: '/login', payload: `token=${TOKEN}&next=//evil.example/`, headers: form });
    expect(login.statusCode).toBe(303);
    expect(login.headers.location).toBe('/');
    expect(String(login.headers['set-cookie'])).toMatch(/^cr_console=alice\.\d+\.[\w-]+; HttpOnly; SameSite=Strict; Path=\//);
    const proxied = await app.inject({ method: 'POST', url: '/login', payload: `token=${TOKEN}`, headers: { ...form, 'x-forwarded-proto': 'https' } });
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
    const done = await app.inject({ method: 'POST', url: '/targets/pause', payload: `origin=https%3A%2F%2Fa.example&csrf=${csrf}`, headers });
    expect(done.statusCode).toBe(303);
    expect(done.headers.location).toBe('/targets?done=paused');
    expect(calls).toEqual(['pause https://a.example by alice']);
    const spoofed = await app.inject({ method: 'GET', url: '/dead-letters?done=replayed&n=all%20of%20them&kept=0', headers });
    expect(spoofed.body).toContain('Replayed ? message(s); 0 kept');
    const targets = await app.inject({ method: 'GET', url: '/targets', headers });
    expect(targets.body).toContain(`name="csrf" value="${csrf}"`);
    expect(targets.body).toContain('data-origin="https://held.example"');
  });
});
