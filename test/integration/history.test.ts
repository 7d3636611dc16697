import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import type { OutcomeEvent } from '../../src/events/outcome-events.js';
import { describeEachMode } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import type { RelayFixture } from '../support/relay.js';
import { configEnv } from '../support/worker-process.js';

const run = promisify(execFile);
const open = openedInEachTest();

/** Runs `callback-relay history …` as its own process, like an operator would. */
async function history(relay: RelayFixture, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const options = { env: { ...process.env, ...configEnv(relay.config), LOG_LEVEL: 'warn' } };
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'history', ...args], options);
    return { code: 0, stdout, stderr };
  } catch (error) {
    return error as { code: number; stdout: string; stderr: string };
  }
}

describeEachMode('history', (mode) => {
  it('a callback that failed twice then succeeded: three attempts in its timeline, in order', async () => {
    const receiver = await open.receiver((r) => (r.nth <= 2 ? { status: 503 } : { status: 200 }));
    const elsewhere = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, EVENTS: 'durable', HISTORY: 'on', RETRY_SCHEDULE: '200ms,200ms' });
    await relay.startWorker();
    const { id } = await relay.publisher.publish({ url: `${receiver.origin}/twice`, body: { n: 1 } });
    const other = await relay.publisher.publish({ url: `${elsewhere.origin}/other`, body: { n: 2 } });
    await receiver.waitFor((r) => r.length === 3, 30_000);

    // The last event is stored before its ack, so it may still be on its way once the receiver answered.
    let events: OutcomeEvent[] = [];
    for (let tries = 0; tries < 20 && events.length < 3; tries += 1) {
      const result = await history(relay, [id, '--json']);
      events = JSON.parse(result.stdout || '[]') as OutcomeEvent[];
    }
    expect(events.map((e) => [e.type, e.attempt, e.status])).toEqual([
      ['retry-scheduled', 1, 503],
      ['retry-scheduled', 2, 503],
      ['delivered', 3, 200],
    ]);
    expect(events.every((e) => e.id === id && typeof e.worker === 'string' && typeof e.durationMs === 'number')).toBe(true);
    expect(events[0]!.nextAttemptAt).toBeDefined();

    const text = await history(relay, [id, '--since', '1h']);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/attempt 1 {2}retry-scheduled {2}HTTP 503 {2}\d+ms {2}\S+\/\d+ {2}next /);
    expect(lines[2]).toMatch(/attempt 3 {2}delivered {2}HTTP 200/);
    expect(text.stdout).not.toContain(other.id);

    const missing = await history(relay, ['no-such-callback']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no events of callback "no-such-callback"');
  });

  it('--follow --target prints new events of that origin only, until interrupted', async () => {
    const wanted = await open.receiver(() => ({ status: 200 }));
    const others = await open.receiver(() => ({ status: 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, HISTORY: 'on' });
    await relay.startWorker();
    const before = await relay.publisher.publish({ url: `${wanted.origin}/before`, body: 0 });
    await wanted.waitFor((r) => r.length === 1);
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'history', '--follow', '--target', wanted.origin, '--json'],
      {
        env: { ...process.env, ...configEnv(relay.config), LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      // The follower starts at "next": it sees only events stored after it says it is reading. A
      // fixed pause was not enough where the machine was busy, and it started after the events.
      const reading = Date.now() + 60_000;
      while (!stderr.includes('following ') && child.exitCode === null && Date.now() < reading)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(stderr).toContain(`following ${relay.names.historyQueue} from now until interrupted\n`);
      const mine = await relay.publisher.publish({ url: `${wanted.origin}/mine`, body: 1 });
      const theirs = await relay.publisher.publish({ url: `${others.origin}/theirs`, body: 2 });
      await others.waitFor((r) => r.length === 1);
      const deadline = Date.now() + 20_000;
      while (!stdout.includes(mine.id) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      const printed = stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as OutcomeEvent);
      expect(printed.map((e) => [e.id, e.type])).toEqual([[mine.id, 'delivered']]);
      expect(stdout).not.toContain(theirs.id);
      expect(stdout).not.toContain(before.id);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
