#!/usr/bin/env node
// Screenshot of the RabbitMQ management UI showing a dead-lettered callback in the DLQ,
// with "Get messages" expanded (payload + x-callback-* headers), for docs/dead-letter-queue.md.
//
//   node scripts/screenshot-dlq.mjs [out.png]        (default: docs/dlq-management-ui.png)
//
// Needs: a broker with the management plugin (scripts/local-broker.sh start .relay/rabbitmq),
// at least one message in the DLQ, Debian's chromium (apt-get install -y chromium) and
// playwright-core installed without touching package.json (npm i --no-save playwright-core).
//
// Environment (all optional):
//   MGMT_URL        management UI base URL           (default http://localhost:15672/)
//   MGMT_USER/PASS  UI credentials                    (default guest / guest)
//   DLQ_NAME        queue to inspect                  (default callback-relay.dead)
//   MESSAGE_COUNT   how many messages to "Get"        (default 1)
//   CHROMIUM_PATH   browser binary                    (default /usr/bin/chromium)
//
// Messages are fetched with Ack mode "Nack message requeue true", so they stay in the queue.
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const out = resolve(process.argv[2] ?? 'docs/dlq-management-ui.png');
const baseUrl = (process.env.MGMT_URL ?? 'http://localhost:15672/').replace(/\/*$/, '/');
const user = process.env.MGMT_USER ?? 'guest';
const pass = process.env.MGMT_PASS ?? 'guest';
const queue = process.env.DLQ_NAME ?? 'callback-relay.dead';
const count = Math.max(1, Number.parseInt(process.env.MESSAGE_COUNT ?? '1', 10) || 1);
const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

let chromium;
try {
  ({ chromium } = await import('playwright-core'));
} catch (err) {
  console.error(
    'screenshot-dlq: playwright-core is not installed.\n' +
      '  Install it without adding it to package.json:  npm i --no-save playwright-core\n' +
      `  (${err instanceof Error ? err.message : err})`,
  );
  process.exit(1);
}

const profile = mkdtempSync(join(tmpdir(), 'screenshot-dlq-'));
let context;
try {
  // Playwright rejects --user-data-dir in `args`; a persistent context on a fresh temp dir
  // is the supported way to pass one (it is deleted again below).
  context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 1000 },
    deviceScaleFactor: 1,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(15_000);

  // Log in.
  await page.goto(baseUrl, { waitUntil: 'domcontentloaded' });
  await page.fill('input[name="username"]', user);
  await page.fill('input[name="password"]', pass);
  await page.click('input[type="submit"]');
  await page.waitForSelector('#logout', { state: 'attached' }).catch(async () => {
    const status = await page
      .locator('#login-status, .form-popup-warn')
      .allInnerTexts()
      .catch(() => []);
    throw new Error(`login as ${user} failed at ${baseUrl} ${status.join(' ')}`.trim());
  });

  // Open the queue page.
  await page.goto(`${baseUrl}#/queues/${encodeURIComponent('/')}/${encodeURIComponent(queue)}`);
  const title = page.locator('#main h1', { hasText: queue });
  await title.waitFor().catch(() => {
    throw new Error(`queue page for ${queue} did not load (does the queue exist?)`);
  });

  // Collapse "Overview" (rate charts) to keep the picture compact, and expand "Get messages"
  // (sections start collapsed in a fresh profile, except Overview).
  const sectionOf = (heading) =>
    page.locator('#main div.section, #main div.section-hidden').filter({
      has: page.locator('h2', { hasText: heading }),
    });
  const overview = sectionOf('Overview');
  if (await overview.locator('div.hider').isVisible()) await overview.locator('h2').click();
  const section = sectionOf('Get messages');
  const form = section.locator('form[action="#/queues/get"]');
  if (!(await form.isVisible())) await section.locator('h2', { hasText: 'Get messages' }).click();
  await form.waitFor({ state: 'visible' });

  // Peek without removing: Nack + requeue.
  await form.locator('select[name="ackmode"]').selectOption('ack_requeue_true');
  await form.locator('select[name="encoding"]').selectOption('auto');
  await form.locator('input[name="count"]').fill(String(count));
  await form.locator('input[type="submit"][value="Get Message(s)"]').click();

  const results = page.locator('#msg-wrapper');
  await results
    .locator('table.facts')
    .first()
    .waitFor()
    .catch(async () => {
      const text = (await results.innerText().catch(() => '')).trim();
      throw new Error(`no message shown for ${queue}${text ? `: ${text}` : ' (is the queue empty?)'}`);
    });
  // Move the pointer off the (now highlighted) button and let the layout settle.
  await page.mouse.move(1270, 990);
  await page.waitForTimeout(500);

  await results.scrollIntoViewIfNeeded();

  // Crop: from the top of the page (UI header with the Queues tab, queue title) down to the
  // end of the fetched message(s). The UI header is position:fixed, so measure and shoot at
  // scroll position 0 to keep it at the top of the picture.
  await page.evaluate(() => window.scrollTo(0, 0));
  const box = await results.boundingBox();
  if (!box) throw new Error('could not measure the page layout');
  const height = Math.ceil(box.y + box.height + 16);
  mkdirSync(dirname(out), { recursive: true });
  await page.screenshot({
    path: out,
    fullPage: true,
    clip: { x: 0, y: 0, width: 1280, height },
  });
  console.log(`wrote ${out} (${Math.round(statSync(out).size / 1024)} KB)`);
} catch (err) {
  console.error(`screenshot-dlq: ${err instanceof Error ? err.message : err}`);
  process.exitCode = 1;
} finally {
  await context?.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
}
