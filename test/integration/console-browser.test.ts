import { existsSync } from 'node:fs';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsole, type RunningConsole } from '../../src/console/start-console.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startRelay, type RelayFixture } from '../support/relay.js';

/** A real headless Chromium: CHROMIUM_PATH, else Debian's /usr/bin/chromium; without one the suite is skipped. */
const chromium = [process.env.CHROMIUM_PATH, '/usr/bin/chromium'].find((path): path is string => path !== undefined && path !== '' && existsSync(path));
const TOKEN = 'alice-console-token-0123';
/** README's screenshots are taken with CONSOLE_SCREENSHOTS=1 only, so a test run leaves the tree as it was. */
const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS === '1';
const HOSTILE = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">';

describe.skipIf(chromium === undefined)('console in a browser', () => {
  let relay: RelayFixture;
  let good: Receiver;
  let bad: Receiver;
  let flaky: Receiver;
  let flakyHealthy = false;
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

  beforeAll(async () => {
    good = await startReceiver(() => ({ status: 200, delayMs: 5 }));
    bad = await startReceiver(() => ({ status: 500, body: 'boom' }));
    flaky = await startReceiver(() => (flakyHealthy ? { status: 200 } : { status: 503 }));
    relay = await startRelay({ HISTORY: 'on', EVENTS: 'durable', RETRY_SCHEDULE: '200ms,200ms', MAX_ATTEMPTS: '3', CONSOLE_TOKENS: `alice:${TOKEN}`, AUTO_PAUSE_AFTER: '0' });
    await relay.startWorker();
    for (let i = 0; i < 12; i += 1) await relay.publisher.publish({ url: `${good.origin}/ok`, body: { n: i } });
    for (let i = 0; i < 3; i += 1) await relay.publisher.publish({ url: `${bad.origin}/fail`, body: { n: i } });
    hostileId = (await relay.publisher.publish({ url: `${bad.origin}/fail`, body: { html: HOSTILE } })).id;
    flakyId = (await relay.publisher.publish({ url: `${flaky.origin}/later`, body: { n: 'flaky' } })).id;
    await relay.waitForDead(5);
    await good.waitFor((requests) => requests.length === 12);
    const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => void (logLines.push(JSON.parse(chunk.toString()) as Record<string, unknown>), done()) });
    consoleApp = await startConsole(relay.config, pino({ level: "info" }, sink), { port: 0 });
    const puppeteer = (await import('puppeteer-core')).default;
    browser = await puppeteer.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
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
    await Promise.all([good?.close(), bad?.close(), flaky?.close()]);
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
    const replica = await startConsole(relay.config, pino({ level: "silent" }), { port: 0 });
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
    expect(await text('.notice')).toBe('Replayed 4 message(s); 0 kept in P.dead.');
    expect(logLines.some((line) => line.action === 'replay' && line.selector === 'group' && line.touched === 4)).toBe(true);
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

  it('a POST without the CSRF token is refused; a bearer token reads; every answer carries the CSP', async () => {
    const cookie = (await page.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const forged = await fetch(`${consoleApp.origin}/targets/pause`, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: `origin=${encodeURIComponent(good.origin)}`, redirect: 'manual' });
    expect(forged.status).toBe(403);
    const anonymous = await fetch(`${consoleApp.origin}/targets`, { redirect: 'manual' });
    expect(anonymous.status).toBe(303);
    const bearer = await fetch(`${consoleApp.origin}/targets`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(bearer.status).toBe(200);
    expect(bearer.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await bearer.text()).not.toContain(TOKEN);
  });
});
