import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, expect, it } from 'vitest';
import { findRabbitmqServer, startLocalBroker, type LocalNode } from '../support/local-broker.js';
import { sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';

// A retry copy whose confirm comes later than PUBLISH_TIMEOUT because a memory alarm blocks the
// worker's connection (https://www.rabbitmq.com/docs/connection-blocked). The copy may be stored, so
// the worker must wait for the broker's answer: rejecting the original too would leave the callback
// both retried and parked. A throwaway node of our own: the alarm blocks every publisher on it.
//
// The alarm is raised after the worker took the message and before the receiver answers, and the
// answer is held until the node reports the alarm: the copy is published only on a connection the
// broker no longer reads. The worker's late-confirm warning and a connection in state `blocked` show
// that the copy met the alarm, however slow the machine.

const run = promisify(execFile);
let node: LocalNode | undefined;
// Registered before the relay's and receiver's: it runs after them (afterEach hooks run last-first).
afterEach(async () => {
  await node?.stop();
  node = undefined;
});
const open = openedInEachTest();
const serverBin = findRabbitmqServer();

const LATE_CONFIRM = 'is not confirmed yet';

/** Runs `rabbitmqctl` against `target` (its HOME holds the Erlang cookie) and returns its output. */
async function rabbitmqctl(target: LocalNode, args: string[]): Promise<string> {
  const bin = join(dirname(serverBin as string), 'rabbitmqctl');
  const { stdout } = await run(bin, ['-n', target.node, ...args], { env: { ...process.env, HOME: target.home }, timeout: 60_000 });
  return stdout;
}

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await sleep(200);
  }
}

/** A watermark of 0 sets the memory alarm off at once: https://www.rabbitmq.com/docs/memory#configuring-threshold */
async function raiseMemoryAlarm(target: LocalNode): Promise<void> {
  await rabbitmqctl(target, ['set_vm_memory_high_watermark', '0']);
  await until('the memory alarm is reported', async () => (await rabbitmqctl(target, ['eval', 'rabbit_alarm:get_alarms().'])).includes('resource_limit,memory'), 60_000);
}

async function clearMemoryAlarm(target: LocalNode): Promise<void> {
  await rabbitmqctl(target, ['set_vm_memory_high_watermark', '0.4']);
  await until('the memory alarm is cleared', async () => !(await rabbitmqctl(target, ['eval', 'rabbit_alarm:get_alarms().'])).includes('resource_limit,memory'), 60_000);
}

/** The worker's JSON log lines (complete ones) that report `id`'s copy as not confirmed yet. */
const lateConfirmLines = (output: string, id: string): Array<Record<string, unknown>> =>
  output
    .split('\n')
    .filter((line) => line.includes(LATE_CONFIRM) && line.endsWith('}'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.id === id);

it.skipIf(serverBin === undefined)('a retry copy unconfirmed past PUBLISH_TIMEOUT (a blocked connection) is waited for: retried once unblocked, never also parked', async () => {
  const started = await startLocalBroker(serverBin as string);
  node = started;
  try {
    let alarm: Promise<void> | undefined;
    const receiver = await open.receiver((request) => {
      if (request.headers['x-callback-attempt'] !== '1') return { status: 200 };
      // The worker holds the message now: its 500 (and so the retry copy) comes once the alarm is up.
      alarm = raiseMemoryAlarm(started);
      return { status: 500, after: alarm };
    });
    // HTTP_TIMEOUT well above the time the alarm takes to go up, so the attempt ends with the 500.
    const relay = await open.relay({ AMQP_URL: started.url, DELAY_MODE: 'queues', RETRY_SCHEDULE: '1s', PUBLISH_TIMEOUT: '1s', HTTP_TIMEOUT: '2m' });
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/hook`, body: { n: 1 } });
    const worker = open.worker(relay.config);
    await worker.consuming;
    await receiver.waitFor((r) => r.length === 1, 60_000);
    await alarm;

    // The copy met the alarm: its confirm is late, and the worker's connection is blocked.
    await until('the worker logs the late confirm', () => lateConfirmLines(worker.output(), id).length > 0, 60_000);
    expect(lateConfirmLines(worker.output(), id)[0]).toMatchObject({ level: 40, kind: 'retry' }); // 40: pino's warn
    const states = (await rabbitmqctl(started, ['list_connections', '-q', 'state'])).split('\n').map((line) => line.trim());
    expect(states).toContain('blocked');
    // Several PUBLISH_TIMEOUTs later the original is neither parked nor acked, and no attempt was made.
    await sleep(4_000);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    expect(receiver.requests).toHaveLength(1);
    expect(lateConfirmLines(worker.output(), id)).toHaveLength(1);

    await clearMemoryAlarm(started);
    await receiver.waitFor((r) => r.length === 2, 60_000);
    // Long enough for a second copy, had one been stored, to come back from its 1 s delay level.
    await sleep(4_000);
    expect(receiver.requests.map((r) => [r.headers['webhook-id'], r.headers['x-callback-attempt']])).toEqual([
      [id, '1'],
      [id, '2'],
    ]);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    for (const queue of [relay.names.workQueue, ...relay.names.delayLevels]) expect(await relay.messageCount(queue)).toBe(0);
  } finally {
    await rabbitmqctl(started, ['set_vm_memory_high_watermark', '0.4']).catch(() => {});
  }
}, 300_000);
