import amqplib from 'amqplib';
import { pino } from 'pino';
import { expect, it } from 'vitest';
import { startConsole } from '../../src/console/start-console.js';
import { recordOf } from '../../src/ordering/log-records.js';
import { openOrderLog } from '../../src/ordering/order-log.js';
import { readAll } from '../../src/ordering/read-all.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import type { RelayFixture } from '../support/relay.js';

const open = openedInEachTest();
const TOKEN = 'alice-Tk7-q9Zr2mX4vB8nW3pL6sD1';
const HELD = 'tenant-1/held';
const STOPPED = 'tenant-1/stopped';

/** The records of the shard's log, as `kind owner` (read with readAll: nothing is appended). */
async function logRecords(relay: RelayFixture): Promise<string[]> {
  const connection = await amqplib.connect(relay.config.amqpUrl);
  try {
    const log = await openOrderLog(connection, relay.names.orderedLogs[0]!);
    const records: string[] = [];
    await readAll(log, ({ headers }) => {
      const record = recordOf(headers);
      if (record) records.push(`${record.kind} ${record.owner}`);
    });
    await log.close();
    return records;
  } finally {
    await connection.close();
  }
}

/** A key's row of the page: its state, the callback id holding it, how many wait in the log, and its text. */
function row(page: string, key: string): { state: string; head: string; logged: number; text: string } | undefined {
  const found = new RegExp(`<tr data-key="${key}" class="state-(\\w+)">([^]*?)</tr>`).exec(page);
  if (!found) return undefined;
  const [, state = '', text = ''] = found;
  const head = /<td class="id"><a [^>]*>([^<]+)<\/a>/.exec(text)?.[1] ?? '';
  const logged = Number(/<td class="num logged">(\d+)<\/td>/.exec(text)?.[1]);
  return { state, head, logged, text: text.replace(/<[^>]+>/g, '') };
}

it('Ordered keys shows a key held by a retry and a key stopped at its dead letter, with what waits behind each, and writes nothing to the log', async () => {
  const receiver = await open.receiver(({ path }) =>
    path.startsWith('/held/') ? { status: 503 } : path === '/stopped/0' ? { status: 410 } : { status: 200 },
  );
  // One shard: a 503 is retried in an hour (its key is held meanwhile); a 410 parks at once, and stops its key.
  const relay = await open.relay({
    ORDERED_SHARDS: '1',
    ORDERED_ON_DEAD: 'stop',
    RETRY_SCHEDULE: '1h',
    MAX_ATTEMPTS: '3',
    CONSOLE_TOKENS: `alice:${TOKEN}`,
  });
  await relay.startWorker();
  const publish = (key: string, path: string) => relay.publisher.publish({ url: `${receiver.origin}${path}`, body: {}, orderKey: key });
  const { id: heldHead } = await publish(HELD, '/held/0');
  const { id: stoppedHead } = await publish(STOPPED, '/stopped/0');
  await receiver.waitFor((requests) => requests.length === 2, 15_000);
  await relay.waitForDead(1, 15_000);
  // Behind them: two callbacks of the held key, one of the stopped key; they go to the log.
  await publish(HELD, '/held/1');
  await publish(HELD, '/held/2');
  await publish(STOPPED, '/stopped/1');

  const consoleApp = await startConsole(relay.config, pino({ level: 'silent' }), { port: 0 });
  try {
    const load = async (): Promise<string> => {
      const answer = await fetch(`${consoleApp.origin}/ordered-keys`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(answer.status).toBe(200);
      return answer.text();
    };
    let page = await load();
    const deadline = Date.now() + 20_000;
    while (row(page, HELD)?.logged !== 2 || row(page, STOPPED)?.logged !== 1) {
      if (Date.now() > deadline) throw new Error(`the page did not show both keys with their followers:\n${page}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      page = await load();
    }
    expect(row(page, HELD)).toMatchObject({ state: 'held', head: heldHead, logged: 2 });
    expect(row(page, STOPPED)).toMatchObject({ state: 'stopped', head: stoppedHead, logged: 1 });
    expect(row(page, STOPPED)?.text).toContain(`stopped — replay its dead letter or run callback-relay ordered release ${STOPPED}`);
    expect(page).toMatch(/id="held">1</);
    expect(page).toMatch(/id="stopped">1</);
    expect(page).toContain(`data-shard="0"`);
    expect(receiver.requests.map((r) => r.path).sort()).toEqual(['/held/0', '/stopped/0']);

    // The console only reads: loading the page again adds no record (a claim of its own would fence the worker).
    const before = await logRecords(relay);
    expect(before.filter((record) => record.startsWith('claim '))).toHaveLength(1);
    await load();
    await load();
    expect(await logRecords(relay)).toEqual(before);
  } finally {
    await consoleApp.close();
  }
});
