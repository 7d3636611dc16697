import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { openDeadQueueSession } from '../../src/dlq/dead-queue-session.js';
import type { DlqEntry } from '../../src/dlq/dlq-entry.js';
import { listDead } from '../../src/dlq/list-dead.js';
import { replayDead } from '../../src/dlq/replay-dead.js';
import { REFRESH_AFTER_RETURNS } from '../../src/dlq/needs-refresh.js';
import { createLogger } from '../../src/logger.js';
import { HEADER } from '../../src/message/headers.js';
import { connectTopology, applyTopology } from '../../src/topology/connect-topology.js';
import type { Receiver } from '../support/receiver.js';
import type { RelayFixture } from '../support/relay.js';
import { configEnv } from '../support/worker-process.js';

const run = promisify(execFile);
let relay: RelayFixture | undefined;
let receiver: Receiver | undefined;
const open = openedInEachTest();

type CliResult = { code: number; stdout: string; stderr: string };

/** Runs `callback-relay dlq …` as its own process (stdin is a pipe, so never a TTY), like an operator would. */
async function dlq(fixture: RelayFixture, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const options = { env: { ...process.env, ...configEnv(fixture.config), LOG_LEVEL: 'warn', ...env } };
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'dlq', ...args], options);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as CliResult;
    return { code, stdout, stderr };
  }
}

/**
 * A relay whose topology is declared, so P.dead and exchange P exist before any worker runs. The
 * fixture's publisher declares it at the same moment, so as a worker does (applyTopology): a queue
 * the other declaration has not started yet is declared again.
 */
async function relayWithTopology(env: Record<string, string> = {}): Promise<RelayFixture> {
  const fixture = await open.relay(env);
  const topology = await connectTopology(fixture.config, createLogger('silent'), new AbortController().signal);
  await applyTopology(topology.url, topology);
  return fixture;
}

/** Parks a callback in P.dead the way the worker does: original body, x-callback-* record headers. */
function park(fixture: RelayFixture, id: string, reason: string, extra: Record<string, unknown> = {}): void {
  const body = Buffer.from(JSON.stringify({ id, url: `http://127.0.0.1:9/${id}`, body: { n: id } }));
  const [attempts, status] = reason === 'exhausted' ? [3, 500] : [1, 404];
  const headers = {
    'x-tenant': 'acme',
    ...{ [HEADER.reason]: reason, [HEADER.attempts]: attempts, [HEADER.lastStatus]: status, [HEADER.lastError]: `HTTP ${status}` },
    ...{
      [HEADER.firstAttemptAt]: new Date(Date.now() - 60_000).toISOString(),
      [HEADER.lastAttemptAt]: new Date(Date.now() - 30_000).toISOString(),
    },
    ...extra,
  };
  const timestamp = Math.floor(Date.now() / 1000) - 120;
  fixture.channel.sendToQueue(fixture.names.deadQueue, body, {
    persistent: true,
    contentType: 'application/json',
    messageId: id,
    timestamp,
    headers,
  });
}

async function parkThree(fixture: RelayFixture): Promise<void> {
  park(fixture, 'cb-a', 'rejected');
  park(fixture, 'cb-b', 'exhausted', { [HEADER.attempt]: 3 });
  park(fixture, 'cb-c', 'rejected');
  await fixture.waitForDead(3);
}

/** Headers minus the delivery counters a quorum queue adds to every delivery. */
function withoutBrokerCounters(headers: Record<string, unknown> | undefined): Record<string, unknown> {
  const { 'x-delivery-count': _count, 'x-acquired-count': _acquired, ...rest } = headers ?? {};
  return rest;
}

const ids = async (fixture: RelayFixture): Promise<Array<string | null>> =>
  JSON.parse((await dlq(fixture, ['list', '--json'])).stdout).map((e: DlqEntry) => e.id);

describe('callback-relay dlq', () => {
  it('list shows the parked callbacks in order and removes nothing; --json and --limit', async () => {
    relay = await relayWithTopology();
    await parkThree(relay);
    const table = await dlq(relay, ['list']);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+URL\s+REASON\s+ATTEMPTS\s+STATUS\s+AGE\s+LAST ERROR$/);
    expect(lines[1]).toMatch(/^cb-a\s+http:\/\/127\.0\.0\.1:9\/cb-a\s+rejected\s+1\s+404\s+3\ds\s+HTTP 404$/);
    expect(lines[2]).toMatch(/^cb-b\s+\S+\s+exhausted\s+3\s+500\s+3\ds\s+HTTP 500$/);
    expect(lines.at(-1)).toBe(`3 messages in ${relay.names.deadQueue}`);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(3);

    const json = await dlq(relay, ['list', '--json']);
    const entries = JSON.parse(json.stdout) as DlqEntry[];
    expect(entries.map((e) => [e.id, e.reason, e.attempts, e.lastStatus])).toEqual([
      ['cb-a', 'rejected', 1, 404],
      ['cb-b', 'exhausted', 3, 500],
      ['cb-c', 'rejected', 1, 404],
    ]);
    expect(entries[0]).toMatchObject({ url: 'http://127.0.0.1:9/cb-a', lastError: 'HTTP 404' });
    expect(entries[0]!.ageSeconds).toBeGreaterThanOrEqual(29);

    const limited = await dlq(relay, ['list', '--limit', '2']);
    expect(limited.stdout.trimEnd().split('\n').at(-1)).toBe(`2 of 3 messages in ${relay.names.deadQueue} (raise --limit to see more)`);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(3);
    // Where the two listed messages went back depends on the broker: quorum queues on RabbitMQ 3.x
    // without a delivery limit append returned messages to the tail, 4.x and classic queues keep the head.
    expect((await ids(relay)).sort()).toEqual(['cb-a', 'cb-b', 'cb-c']);
  });

  it('replay --id republishes exactly that one to P, clean, with the same id, and keeps the others in order', async () => {
    relay = await relayWithTopology();
    await parkThree(relay);
    const result = await dlq(relay, ['replay', '--id', 'cb-b']);
    expect(result).toMatchObject({ code: 0, stdout: 'replayed 1, kept 2\n' });
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(2);
    const copy = await relay.channel.get(relay.names.workQueue, { noAck: true });
    if (copy === false) throw new Error('no replayed message in P.work');
    expect(JSON.parse(copy.content.toString())).toEqual({ id: 'cb-b', url: 'http://127.0.0.1:9/cb-b', body: { n: 'cb-b' } });
    expect(copy.properties).toMatchObject({ messageId: 'cb-b', contentType: 'application/json', deliveryMode: 2 });
    // The replay stamp: a cancel written before the replay no longer applies to the copy (docs/control.md).
    expect(withoutBrokerCounters(copy.properties.headers)).toEqual({
      'x-tenant': 'acme',
      'x-replayed-at': expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
    expect(await ids(relay)).toEqual(['cb-a', 'cb-c']);
  });

  it('replay --reason rejected, then --all; unknown ids exit 1; no selector exits 2', async () => {
    relay = await relayWithTopology();
    await parkThree(relay);
    const none = await dlq(relay, ['replay']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/say what to replay: --id ID \(repeatable\), --reason REASON or --all/);
    const missing = await dlq(relay, ['replay', '--id', 'nope']);
    expect(missing).toMatchObject({ code: 1, stdout: 'replayed 0, kept 3\n' });
    expect(missing.stderr).toMatch(/not found among the 3 message\(s\) looked at in .*: nope/);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(3);

    expect(await dlq(relay, ['replay', '--reason', 'rejected'])).toMatchObject({ code: 0, stdout: 'replayed 2, kept 1\n' });
    expect(await relay.messageCount(relay.names.workQueue)).toBe(2);
    expect(await ids(relay)).toEqual(['cb-b']);

    expect(await dlq(relay, ['replay', '--all'])).toMatchObject({ code: 0, stdout: 'replayed 1, kept 0\n' });
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    expect(await relay.messageCount(relay.names.workQueue)).toBe(3);
  });

  it('replay publishes its copies mandatory in queues mode: one the broker returns stays in P.dead', async () => {
    relay = await relayWithTopology({ DELAY_MODE: 'queues' });
    await parkThree(relay);
    // A half-deleted topology: exchange P exists but routes nothing, so a copy would be dropped and acked.
    await relay.channel.unbindQueue(relay.names.workQueue, relay.names.exchange, relay.names.routingKey);
    const result = await dlq(relay, ['replay', '--all']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/\[CR_ERR_PUBLISH_RETURNED\]/);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(3);
    expect((await ids(relay)).sort()).toEqual(['cb-a', 'cb-b', 'cb-c']);
  });

  it('replay --id holds a bounded amount of the DLQ: past it, kept messages move to the tail, and all are looked at', async () => {
    relay = await relayWithTopology();
    await parkThree(relay);
    const session = await openDeadQueueSession(relay.config);
    try {
      // Room for one parked message (about 60 bytes each), not two.
      const result = await replayDead(session, { kind: 'ids', ids: ['cb-c'] }, undefined, 100);
      expect(result).toEqual({ replayed: 1, kept: 2, examined: 3, notFound: [], movedToTail: 1 });
    } finally {
      await session.close();
    }
    const copy = await relay.channel.get(relay.names.workQueue, { noAck: true });
    expect(copy && copy.properties.messageId).toBe('cb-c');
    expect((await ids(relay)).sort()).toEqual(['cb-a', 'cb-b']);
    const entries = JSON.parse((await dlq(relay, ['list', '--json'])).stdout) as DlqEntry[];
    expect(entries.find((e) => e.id === 'cb-b')).toMatchObject({ reason: 'exhausted', attempts: 3, lastStatus: 500 });
  });

  it('purge at the prompt removes only the messages it showed, not those parked while it waited', async () => {
    relay = await relayWithTopology();
    await parkThree(relay);
    const fixture = relay;
    // `script` gives the CLI a terminal, so it asks.
    const command = `${process.execPath} --import tsx src/cli/main.ts dlq purge`;
    const child = spawn('script', ['-qefc', command, '/dev/null'], {
      env: { ...process.env, ...configEnv(fixture.config), LOG_LEVEL: 'warn' },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const deadline = Date.now() + 30_000;
    while (!output.includes('[y/N]') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(output).toContain(`Purge the 3 oldest messages from ${fixture.names.deadQueue}? [y/N]`);
    park(fixture, 'cb-late-1', 'rejected');
    park(fixture, 'cb-late-2', 'rejected');
    await fixture.waitForDead(5);
    child.stdin.write('y\n');
    expect(await exited).toBe(0);
    expect(output).toContain(`purged 3 messages from ${fixture.names.deadQueue}`);
    expect(await ids(fixture)).toEqual(['cb-late-1', 'cb-late-2']);
  });

  it('purge refuses without a terminal and without --yes, and empties P.dead with --yes', async () => {
    relay = await relayWithTopology();
    await parkThree(relay);
    const refused = await dlq(relay, ['purge']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/not a terminal.*pass --yes/);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(3);
    expect(await dlq(relay, ['purge', '--yes'])).toMatchObject({ code: 0, stdout: `purged 3 messages from ${relay.names.deadQueue}\n` });
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
  });

  it('works on what a real worker parked: a 404 is listed as rejected and replays as attempt 1', async () => {
    receiver = await open.receiver(() => ({ status: 404 }));
    relay = await open.relay();
    const worker = await relay.startWorker();
    const { id } = await relay.publisher.publish({
      url: `${receiver.origin}/gone`,
      body: { will: 'fail' },
      headers: { 'x-tenant': 'acme' },
    });
    await relay.waitForDead(1);
    await worker.stop();
    const [entry] = JSON.parse((await dlq(relay, ['list', '--json'])).stdout) as DlqEntry[];
    expect(entry).toMatchObject({ id, url: `${receiver.origin}/gone`, reason: 'rejected', attempts: 1, lastStatus: 404 });
    expect(await dlq(relay, ['replay', '--id', id])).toMatchObject({ code: 0, stdout: 'replayed 1, kept 0\n' });
    const copy = await relay.channel.get(relay.names.workQueue, { noAck: true });
    if (copy === false) throw new Error('no replayed message in P.work');
    expect(copy.properties.messageId).toBe(id);
    expect(Object.keys(copy.properties.headers ?? {}).filter((name) => name.startsWith('x-callback-'))).toEqual([]);
  });

  // On brokers that count nack-requeues (RabbitMQ 3.x and 4.0–4.2 quorum queues) this goes through the
  // refresh path; on 4.3+ and classic queues the count stays 0 and the assertion holds trivially.
  it('repeated listing never lets the broker delivery count of a parked message grow past the refresh threshold', async () => {
    relay = await relayWithTopology();
    park(relay, 'cb-a', 'rejected');
    await relay.waitForDead(1);
    for (let i = 0; i < REFRESH_AFTER_RETURNS + 3; i += 1) {
      const session = await openDeadQueueSession(relay.config);
      try {
        expect((await listDead(session, 10)).entries.map((e) => e.id)).toEqual(['cb-a']);
      } finally {
        await session.close();
      }
    }
    const message = await relay.channel.get(relay.names.deadQueue, { noAck: false });
    if (message === false) throw new Error('P.dead lost its message');
    expect(Number(message.properties.headers?.['x-delivery-count'] ?? 0)).toBeLessThan(REFRESH_AFTER_RETURNS);
    expect(message.properties.headers).toMatchObject({ 'x-tenant': 'acme', [HEADER.reason]: 'rejected' });
    expect(message.properties.messageId).toBe('cb-a');
    relay.channel.nack(message, false, true);
  });

  it('names the setting when P.dead does not exist, and never prints the AMQP_URL password', async () => {
    relay = await relayWithTopology();
    const missing = await dlq(relay, ['list'], { TOPOLOGY_PREFIX: `${relay.config.topologyPrefix}-nope` });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/CR_ERR_CONFIG.*TOPOLOGY_PREFIX: queue ".*-nope\.dead" does not exist/);
    const unreachable = await dlq(relay, ['list'], { AMQP_URL: 'amqp://guest:s3cret-pw@127.0.0.1:1' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/\[CR_ERR_BROKER_UNREACHABLE\]: cannot connect to the broker at amqp:\/\/\*\*\*@127\.0\.0\.1:1/);
    expect(unreachable.stderr).not.toContain('s3cret-pw');
  });
});
