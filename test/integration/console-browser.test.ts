import { existsSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsole, type RunningConsole } from '../../src/console/start-console.js';
import { openDeadQueueSession } from '../../src/dlq/dead-queue-session.js';
import { peekDead } from '../../src/dlq/list-dead.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startRelay, type RelayFixture } from '../support/relay.js';

/** A real headless Chromium: CHROMIUM_PATH, else Debian's /usr/bin/chromium; without one the suite is skipped. */
const chromium = [process.env.CHROMIUM_PATH, '/usr/bin/chromium'].find(
  (path): path is string => path !== undefined && path !== '' && existsSync(path),
);
const TOKEN = 'alice-Tk7-q9Zr2mX4vB8nW3pL6sD1';
/** README's screenshots are taken with CONSOLE_SCREENSHOTS=1 only, so a test run leaves the tree as it was. */
const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS === '1';
const HOSTILE = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">';

describe.skipIf(chromium === undefined)('console in a browser', () => {
  let relay: RelayFixture;
  let good: Receiver;
  let bad: Receiver;
  let flaky: Receiver;
  let flakyHealthy = false;
  let later: Receiver;
  let laterHealthy = false;
  let consoleApp: RunningConsole;
  let browser: Browser;
  let page: Page;
  let hostileId: string;
  let flakyId: string;
  const logLines: Array<Record<string, unknown>> = [];

  const goto = async (path: string): Promise<void> => {
    await page.goto(`${consoleApp.origin}${path}`, { waitUntil: 'load' });
  };
  /** Reloads `path` until `ready` holds on the page (the console reads streams live; events land within seconds). */
  const until = async (path: string, ready: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await goto(path);
      if (await ready()) return;
      if (Date.now() > deadline) throw new Error(`${path}: not ready within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  };
  const screenshot = async (path: `docs/${string}.png`): Promise<void> => {
    if (SCREENSHOTS) await page.screenshot({ path, fullPage: true });
  };
  const text = (selector: string): Promise<string> => page.$eval(selector, (element) => element.textContent ?? '');
  /** The ids in P.dead, oldest first, each put back. */
  const deadIds = async (): Promise<string[]> => {
    const session = await openDeadQueueSession(relay.config);
    try {
      return (await peekDead(session, 1_000)).messages.map((m) => m.entry.id ?? '?');
    } finally {
      await session.close();
    }
  };
  /** Logs `target` in with `token` from the login page, returning the answer to the POST. */
  const logIn = async (target: Page, origin: string, token: string) => {
    await target.goto(`${origin}/login`, { waitUntil: 'load' });
    await target.type('input[name=token]', token);
    const [response] = await Promise.all([target.waitForNavigation(), target.click('button[type=submit]')]);
    return response;
  };
  const cookieHeader = async (): Promise<string> => (await page.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');

  beforeAll(async () => {
    good = await startReceiver(() => ({ status: 200, delayMs: 5 }));
    bad = await startReceiver(() => ({ status: 500, body: 'boom' }));
    flaky = await startReceiver(() => (flakyHealthy ? { status: 200 } : { status: 503 }));
    later = await startReceiver(() => (laterHealthy ? { status: 200 } : { status: 500 }));
    relay = await startRelay({
      HISTORY: 'on',
      EVENTS: 'durable',
      RETRY_SCHEDULE: '200ms,200ms',
      MAX_ATTEMPTS: '3',
      CONSOLE_TOKENS: `alice:${TOKEN}`,
      AUTO_PAUSE_AFTER: '0',
    });
    await relay.startWorker();
    for (let i = 0; i < 12; i += 1) await relay.publisher.publish({ url: `${good.origin}/ok`, body: { n: i } });
    for (let i = 0; i < 3; i += 1) await relay.publisher.publish({ url: `${bad.origin}/fail`, body: { n: i } });
    hostileId = (await relay.publisher.publish({ url: `${bad.origin}/fail`, body: { html: HOSTILE } })).id;
    flakyId = (await relay.publisher.publish({ url: `${flaky.origin}/later`, body: { n: 'flaky' } })).id;
    await relay.waitForDead(5);
    await good.waitFor((requests) => requests.length === 12);
    const sink = new Writable({
      write: (chunk: Buffer, _encoding, done) => void (logLines.push(JSON.parse(chunk.toString()) as Record<string, unknown>), done()),
    });
    consoleApp = await startConsole(relay.config, pino({ level: 'info' }, sink), { port: 0 });
    const puppeteer = (await import('puppeteer-core')).default;
    browser = await puppeteer.launch({
      executablePath: chromium,
      headless: true,
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
    });
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    await goto('/');
    // Not logged in: the login form. A wrong token is refused; the right one sets the session cookie.
    expect(page.url()).toContain('/login');
    await page.type('input[name=token]', 'not-the-token-at-all-0000');
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
    expect(await text('.notice')).toContain('not one of CONSOLE_TOKENS');
    await page.type('input[name=token]', TOKEN);
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
    const cookies = await page.cookies();
    expect(cookies.find((cookie) => cookie.name === 'cr_console')?.httpOnly).toBe(true);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await consoleApp?.close();
    await relay?.cleanup();
    await Promise.all([good?.close(), bad?.close(), flaky?.close(), later?.close()]);
  });

  it('Overview: a chart drawn by the local uPlot, queue depths and the worker connected', async () => {
    // Ready once the read of P.history reached the present (no "still reading" notice) with the deliveries in it.
    await until('/', async () => (await page.$('.notice')) === null && Number(await text('#delivered')) === 12);
    // 3 + 1 + 1 callbacks failed every attempt: two retries each, then dead (MAX_ATTEMPTS 3).
    expect([Number(await text('#retries')), Number(await text('#dead'))]).toEqual([10, 5]);
    expect(Number(await text('#throughput'))).toBeLessThanOrEqual(12);
    expect(await page.$('#chart canvas')).not.toBeNull();
    expect(Number(await text('#workers'))).toBeGreaterThanOrEqual(1);
    expect(await text('table.queues')).toContain(relay.names.deadQueue);
    await screenshot('docs/console-overview.png');
  });

  it('Targets: the failing target is at the top', async () => {
    await until('/targets', async () => (await page.$$('table.targets tbody tr')).length >= 3);
    const origins = await page.$$eval('table.targets tbody tr', (rows) => rows.map((row) => row.getAttribute('data-origin')));
    expect(origins[0]).toBe(bad.origin);
    expect(await text('table.targets tbody tr:first-child td.error')).toContain('HTTP 500');
    await screenshot('docs/console-targets.png');
  });

  it('Dead letters: grouped by target and reason; a body holding <script> is shown as text', async () => {
    await goto('/dead-letters');
    const group = await page.$eval(`table.groups tr[data-origin="${bad.origin}"]`, (row) => row.textContent ?? '');
    expect(group).toContain('exhausted');
    expect(group).toMatch(/\b4\b/);
    await screenshot('docs/console-dead-letters.png');
    await goto(`/dead-letters/message?id=${encodeURIComponent(hostileId)}`);
    expect(await text('#body')).toContain('<script>window.__xss = 1</script>');
    expect(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.$('main script, main img')).toBeNull();
    await screenshot('docs/console-dead-letter.png');
  });

  it('replaying a dead letter delivers it, and its Callback timeline shows so', async () => {
    flakyHealthy = true;
    await goto(`/dead-letters?id=${encodeURIComponent(flakyId)}`);
    await page.click(`form#selection input[type=checkbox][value="${flakyId}"]`);
    await Promise.all([page.waitForNavigation(), page.click('#replay-selected')]);
    expect(page.url()).toContain('/callback');
    expect(await text('.notice')).toContain('Replayed 1');
    await flaky.waitFor((requests) => requests.some((r) => r.nth === 4));
    await until(`/callback?id=${encodeURIComponent(flakyId)}`, async () => (await text('#where')).includes('delivered'));
    expect(await page.$$('table.timeline tbody tr')).toHaveLength(4);
    await screenshot('docs/console-callback.png');
    expect(logLines.some((line) => line.action === 'replay' && line.by === 'alice' && line.touched === 1)).toBe(true);
  });

  it('pausing a target from Targets changes its state, and resume restores it', async () => {
    await goto('/targets');
    await Promise.all([page.waitForNavigation(), page.click(`tr[data-origin="${good.origin}"] button`)]);
    expect(await text(`tr[data-origin="${good.origin}"] .badge`)).toBe('paused');
    expect(logLines.some((line) => line.action === 'pause' && line.by === 'alice' && line.origin === good.origin)).toBe(true);
    // A second replica knows it from P.control alone: the console keeps no state of its own.
    const replica = await startConsole(relay.config, pino({ level: 'silent' }), { port: 0 });
    try {
      const badge = async (): Promise<string | undefined> => {
        const body = await (await fetch(`${replica.origin}/targets`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
        return new RegExp(`data-origin="${good.origin}"[^]*?class="badge [^"]*">([^<]+)<`).exec(body)?.[1];
      };
      const deadline = Date.now() + 30_000;
      while ((await badge()) !== 'paused' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await badge()).toBe('paused');
    } finally {
      await replica.close();
    }
    await Promise.all([page.waitForNavigation(), page.click(`tr[data-origin="${good.origin}"] button`)]);
    expect(await text(`tr[data-origin="${good.origin}"] .badge`)).toBe('healthy');
  });

  it('Dead letters: replaying a group replays its callbacks; failing again, they come back', async () => {
    const requests = bad.requests.length;
    await goto('/dead-letters');
    await Promise.all([page.waitForNavigation(), page.click(`table.groups tr[data-origin="${bad.origin}"] button`)]);
    expect(await text('.notice')).toBe('Replayed 4 message(s); 0 canceled left in P.dead.');
    expect(logLines.some((line) => line.action === 'replay' && line.shown === 4 && line.touched === 4)).toBe(true);
    // Three attempts each again (the replay starts the schedule over), then parked again.
    await bad.waitFor((all) => all.length === requests + 12);
    await relay.waitForDead(4);
  });

  it('Callback: a callback not yet attempted can be canceled from its page', async () => {
    const { id } = await relay.publisher.publish({ url: `${good.origin}/later`, body: { n: 'cancel me' } }, { delay: 120_000 });
    await goto(`/callback?id=${encodeURIComponent(id)}&since=1h`);
    expect(await text('#where')).toContain('not attempted yet');
    await Promise.all([page.waitForNavigation(), page.click('form[action="/callback/cancel"] button')]);
    expect(await text('.notice')).toContain('Cancel marker stored');
    expect(await text('#where')).toContain('a cancel marker was written');
    expect(await page.$('form[action="/callback/cancel"]')).toBeNull();
    expect(logLines.some((line) => line.action === 'cancel' && line.by === 'alice' && line.id === id)).toBe(true);
  });

  it('Dead letters: a purge asks first, naming the count, then removes that many', async () => {
    const count = await relay.messageCount(relay.names.deadQueue);
    expect(count).toBeGreaterThan(0);
    await goto('/dead-letters');
    await Promise.all([page.waitForNavigation(), page.click('a[href="/dead-letters/purge"]')]);
    expect(await text('#purge-count')).toBe(String(count));
    await Promise.all([page.waitForNavigation(), page.click('form[action="/dead-letters/purge"] button')]);
    expect(await text('.notice')).toBe(`Purged ${count} message(s).`);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    expect(logLines.some((line) => line.action === 'purge' && line.by === 'alice' && line.touched === count)).toBe(true);
  });

  it('purge and replay act on exactly the messages shown, while other callbacks are parked in between; canceled ones stay unless asked', async () => {
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    const shown = [
      (await relay.publisher.publish({ url: `${later.origin}/a`, body: { n: 'a' } })).id,
      (await relay.publisher.publish({ url: `${later.origin}/b`, body: { n: 'b' } })).id,
    ];
    // Cancelled on purpose before its first attempt: parked as `canceled`.
    const { id: canceledId } = await relay.publisher.publish({ url: `${later.origin}/c`, body: { n: 'c' } }, { delay: 1_500 });
    const cancel = await fetch(`${consoleApp.origin}/callback/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: `id=${encodeURIComponent(canceledId)}`,
      redirect: 'manual',
    });
    expect(cancel.status).toBe(303);
    await relay.waitForDead(3);
    await goto('/dead-letters');
    expect(await text('form.replay-all button')).toBe('Replay all 3 shown');
    expect(await text('form.replay-all label')).toContain('include the 1 canceled');
    // Parked after the page was shown: not among what the operator saw.
    const { id: inBetween } = await relay.publisher.publish({ url: `${bad.origin}/between`, body: { n: 'between' } });
    await relay.waitForDead(4);
    laterHealthy = true;
    await Promise.all([page.waitForNavigation(), page.click('form.replay-all button')]);
    expect(await text('.notice')).toBe('Replayed 2 message(s); 1 canceled left in P.dead.');
    await later.waitFor((requests) => shown.every((id) => requests.some((r) => r.headers['webhook-id'] === id)));
    expect((await deadIds()).sort()).toEqual([canceledId, inBetween].sort());
    expect(logLines.some((line) => line.action === 'replay' && line.touched === 2 && line.skippedCanceled === 1)).toBe(true);

    // The purge page lists what it will delete; a callback parked after it is shown stays.
    await goto('/dead-letters/purge');
    expect(await text('#purge-count')).toBe('2');
    const { id: parkedAfter } = await relay.publisher.publish({ url: `${bad.origin}/after`, body: { n: 'after' } });
    await relay.waitForDead(3);
    await Promise.all([page.waitForNavigation(), page.click('form.purge button')]);
    expect(await text('.notice')).toBe('Purged 2 message(s).');
    expect(await deadIds()).toEqual([parkedAfter]);

    // Gone meanwhile (another operator purged it): refused, naming how many were found, nothing purged.
    await goto('/dead-letters/purge');
    expect(await text('#purge-count')).toBe('1');
    expect((await relay.drainDead()).length).toBe(1);
    const { id: another } = await relay.publisher.publish({ url: `${bad.origin}/another`, body: { n: 'another' } });
    await relay.waitForDead(1);
    const [refused] = await Promise.all([page.waitForNavigation(), page.click('form.purge button')]);
    expect(refused?.status()).toBe(409);
    expect(await text('.notice')).toContain('[CR_ERR_DEAD_CHANGED] found 0 of the 1 message(s) shown');
    expect(await deadIds()).toEqual([another]);
    await relay.drainDead();
  });

  it('listens on loopback by default and says where in its first log line', async () => {
    expect(relay.config.consoleHost).toBe('127.0.0.1');
    expect(consoleApp.host).toBe('127.0.0.1');
    const { port } = new URL(consoleApp.origin);
    expect(logLines[0]).toMatchObject({ host: '127.0.0.1', port: Number(port), msg: `console listening on http://127.0.0.1:${port}` });
    // Not reachable on the machine's other addresses.
    const external = Object.values(networkInterfaces())
      .flat()
      .find((address) => address !== undefined && address.family === 'IPv4' && !address.internal);
    if (external !== undefined) await expect(fetch(`http://${external.address}:${port}/healthz`)).rejects.toThrow();
  });

  it('after too many wrong tokens from one address, login answers 429 with Retry-After, and logs a line to alert on', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write: (chunk: Buffer, _encoding, done) => void (lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>), done()),
    });
    const replica = await startConsole(relay.config, pino({ level: 'info' }, sink), {
      port: 0,
      throttle: { perClient: 3, global: 100, windowMs: 60_000, maxClients: 100 },
    });
    const context = await browser.createBrowserContext();
    try {
      const other = await context.newPage();
      for (let i = 0; i < 3; i += 1) expect((await logIn(other, replica.origin, 'wrong-Tk7-q9Zr2mX4vB8nW3pL6sD1'))?.status()).toBe(200);
      const throttled = await logIn(other, replica.origin, TOKEN);
      expect(throttled?.status()).toBe(429);
      expect(Number(throttled?.headers()['retry-after'])).toBeGreaterThan(50);
      expect(await other.$eval('#throttled', (element) => element.textContent ?? '')).toContain('Too many failed logins from this address');
      expect(lines.filter((line) => line.event === 'console.login.throttled')).toEqual([
        expect.objectContaining({ scope: 'client', client: '127.0.0.1', limit: 3 }),
      ]);
    } finally {
      await context.close();
      await replica.close();
    }
  });

  it('a login never sends the browser off-site, whatever next says', async () => {
    const context = await browser.createBrowserContext();
    try {
      const other = await context.newPage();
      for (const next of ['/\t/evil.example/', '//evil.example/', '/\\evil.example/', 'https://evil.example/']) {
        await other.goto(`${consoleApp.origin}/login`, { waitUntil: 'load' });
        await other.$eval('input[name=next]', (input, value) => ((input as unknown as { value: string }).value = value), next);
        await other.type('input[name=token]', TOKEN);
        await Promise.all([other.waitForNavigation(), other.click('button[type=submit]')]);
        expect(new URL(other.url()).origin, JSON.stringify(next)).toBe(consoleApp.origin);
        expect(new URL(other.url()).pathname).toBe('/');
      }
      // Also when it comes in the login link itself.
      await other.goto(`${consoleApp.origin}/login?next=${encodeURIComponent('/\t/evil.example/')}`, { waitUntil: 'load' });
      expect(await other.$eval('input[name=next]', (input) => (input as unknown as { value: string }).value)).toBe('/');
    } finally {
      await context.close();
    }
  });

  it('a POST without the CSRF token is refused; a bearer token reads; every answer carries the CSP', async () => {
    const cookie = (await page.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const forged = await fetch(`${consoleApp.origin}/targets/pause`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: `origin=${encodeURIComponent(good.origin)}`,
      redirect: 'manual',
    });
    expect(forged.status).toBe(403);
    const anonymous = await fetch(`${consoleApp.origin}/targets`, { redirect: 'manual' });
    expect(anonymous.status).toBe(303);
    const bearer = await fetch(`${consoleApp.origin}/targets`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(bearer.status).toBe(200);
    expect(bearer.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await bearer.text()).not.toContain(TOKEN);
  });

  it('logging out ends the session on every replica: the same cookie is refused on another one too', async () => {
    const replica = await startConsole(relay.config, pino({ level: 'silent' }), { port: 0 });
    try {
      const cookie = await cookieHeader();
      const on = async (origin: string): Promise<number> =>
        (await fetch(`${origin}/targets`, { headers: { cookie }, redirect: 'manual' })).status;
      expect(await on(replica.origin)).toBe(200);
      await goto('/');
      await Promise.all([page.waitForNavigation(), page.click('form[action="/logout"] button')]);
      expect(page.url()).toContain('/login');
      expect(await on(consoleApp.origin)).toBe(303);
      // The other replica reads the end of the session from P.control.
      const deadline = Date.now() + 10_000;
      while ((await on(replica.origin)) !== 303 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await on(replica.origin)).toBe(303);
      expect(logLines.some((line) => line.action === 'logout' && line.by === 'alice')).toBe(true);
    } finally {
      await replica.close();
    }
  });
});
