import { afterEach, expect, inject, it } from 'vitest';
import { execInContainer } from '../support/container-broker.js';
import { findRabbitmqServer, localRabbitmqctl, startLocalBroker, type LocalNode } from '../support/local-broker.js';
import { sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';

// A retry copy whose confirm comes later than PUBLISH_TIMEOUT because a memory alarm blocks the
// worker's connection (https://www.rabbitmq.com/docs/connection-blocked). The copy may be stored, so
// the worker must wait for the broker's answer: rejecting the original too would leave the callback
// both retried and parked. The alarm blocks every publisher of the node: the run's broker when it is
// the harness's container (the series under test; files run one after another, and the alarm is
// always lifted), else a throwaway node of our own.
//
// The alarm is raised after the worker took the message and before the receiver answers, and the
// answer is held until the node reports the alarm: the copy is published only on a connection the
// broker no longer reads. The worker's late-confirm warning and a connection in state `blocked` show
// that the copy met the alarm, however slow the machine.

let node: LocalNode | undefined;
// Registered before the relay's and receiver's: it runs after them (afterEach hooks run last-first).
afterEach(async () => {
  await node?.stop();
  node = undefined;
});
const open = openedInEachTest();
const serverBin = findRabbitmqServer();

const LATE_CONFIRM = 'is not confirmed yet';

/** A broker whose alarms the test may set: its URL and `rabbitmqctl` on it. */
interface AlarmableBroker {
  url: string;
  ctl(args: string[]): Promise<string>;
}

/** The harness's container when it is the run's broker, else a throwaway node; undefined when neither. */
async function alarmableBroker(): Promise<AlarmableBroker | undefined> {
  const id = inject('brokerContainerId');
  if (inject('brokerSource') === 'testcontainers' && id)
    return { url: inject('amqpUrl'), ctl: (args) => execInContainer(id, ['rabbitmqctl', ...args]) };
  if (serverBin === undefined) return undefined;
  node = await startLocalBroker(serverBin);
  const started = node;
  return { url: node.url, ctl: (args) => localRabbitmqctl(serverBin, started, args) };
}

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await sleep(200);
  }
}

/** A watermark of 0 sets the memory alarm off at once: https://www.rabbitmq.com/docs/memory#configuring-threshold */
async function raiseMemoryAlarm(target: AlarmableBroker): Promise<void> {
  await target.ctl(['set_vm_memory_high_watermark', '0']);
  await until(
    'the memory alarm is reported',
    async () => (await target.ctl(['eval', 'rabbit_alarm:get_alarms().'])).includes('resource_limit,memory'),
    60_000,
  );
}

/** Back to the watermark the broker had (a fraction of RAM: 0.4 on 3.x, 0.6 on 4.x). */
async function clearMemoryAlarm(target: AlarmableBroker, watermark: string): Promise<void> {
  await target.ctl(['set_vm_memory_high_watermark', watermark]);
  await until(
    'the memory alarm is cleared',
    async () => !(await target.ctl(['eval', 'rabbit_alarm:get_alarms().'])).includes('resource_limit,memory'),
    60_000,
  );
}

/** The broker's relative watermark before the test, e.g. "0.4"; 0.4 when it is not a plain fraction. */
async function currentWatermark(target: AlarmableBroker): Promise<string> {
  const output = await target.ctl(['eval', 'vm_memory_monitor:get_vm_memory_high_watermark().']).catch(() => '');
  return /^\s*\{?(?:relative,\s*)?(0\.\d+)\}?\s*$/.exec(output)?.[1] ?? '0.4';
}

/** The worker's JSON log lines (complete ones) that report `id`'s copy as not confirmed yet. */
const lateConfirmLines = (output: string, id: string): Array<Record<string, unknown>> =>
  output
    .split('\n')
    .filter((line) => line.includes(LATE_CONFIRM) && line.endsWith('}'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.id === id);

const canAlarm = serverBin !== undefined || inject('brokerSource') === 'testcontainers';

it.skipIf(!canAlarm)(
  'a retry copy unconfirmed past PUBLISH_TIMEOUT (a blocked connection) is waited for: retried once unblocked, never also parked',
  async () => {
    const started = await alarmableBroker();
    if (!started) throw new Error('no broker whose alarms this test may set');
    const watermark = await currentWatermark(started);
    try {
      let alarm: Promise<void> | undefined;
      const receiver = await open.receiver((request) => {
        if (request.headers['x-callback-attempt'] !== '1') return { status: 200 };
        // The worker holds the message now: its 500 (and so the retry copy) comes once the alarm is up.
        alarm = raiseMemoryAlarm(started);
        return { status: 500, after: alarm };
      });
      // HTTP_TIMEOUT well above the time the alarm takes to go up, so the attempt ends with the 500.
      const relay = await open.relay({
        AMQP_URL: started.url,
        DELAY_MODE: 'queues',
        RETRY_SCHEDULE: '1s',
        PUBLISH_TIMEOUT: '1s',
        HTTP_TIMEOUT: '2m',
      });
      const { id } = await relay.publisher.publish({ url: `${receiver.origin}/hook`, body: { n: 1 } });
      const worker = open.worker(relay.config);
      await worker.consuming;
      await receiver.waitFor((r) => r.length === 1, 60_000);
      await alarm;

      // The copy met the alarm: its confirm is late, and the worker's connection is blocked.
      await until('the worker logs the late confirm', () => lateConfirmLines(worker.output(), id).length > 0, 60_000);
      expect(lateConfirmLines(worker.output(), id)[0]).toMatchObject({ level: 40, kind: 'retry' }); // 40: pino's warn
      const states = (await started.ctl(['list_connections', '-q', 'state'])).split('\n').map((line) => line.trim());
      expect(states).toContain('blocked');
      // Several PUBLISH_TIMEOUTs later the original is neither parked nor acked, and no attempt was made.
      await sleep(4_000);
      expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
      expect(receiver.requests).toHaveLength(1);
      expect(lateConfirmLines(worker.output(), id)).toHaveLength(1);

      await clearMemoryAlarm(started, watermark);
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
      await started.ctl(['set_vm_memory_high_watermark', watermark]).catch(() => {});
    }
  },
  300_000,
);
