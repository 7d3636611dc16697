import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { EXPIRE_MS, HEARTBEAT_MS, startFleetPresence, type FleetPresence } from '../../src/control/fleet-presence.js';
import { createLogger } from '../../src/logger.js';
import type { RelayFixture } from '../support/relay.js';
import { cli } from '../support/cli.js';
import { sleep } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import type { ReceivedRequest } from '../support/receiver.js';

const open = openedInEachTest();

/** Publishes `count` callbacks to `origin`, a few hundred at a time. */
async function publishMany(relay: RelayFixture, origin: string, count: number): Promise<void> {
  for (let start = 0; start < count; start += 200) {
    const batch = Array.from({ length: Math.min(200, count - start) }, (_, i) =>
      relay.publisher.publish({ url: `${origin}/hook`, body: { n: start + i } }),
    );
    await Promise.all(batch);
  }
}

const between = (requests: ReceivedRequest[], fromMs: number, toMs: number): number =>
  requests.filter((r) => r.at >= fromMs && r.at < toMs).length;

const firstAttempts = (requests: ReceivedRequest[]): boolean => requests.every((r) => r.headers['x-callback-attempt'] === '1');

it('a limit set while a backlog drains takes effect within seconds on every worker (2 workers), and no attempt is spent waiting', async () => {
  // About 50/s before the limit (2 workers × 5 slots, 200 ms answers): the backlog outlasts the CLI's start.
  const receiver = await open.receiver(() => ({ status: 200, delayMs: 200 }));
  const relay = await open.relay({ PREFETCH: '5' });
  await relay.startWorker();
  await relay.startWorker();
  await publishMany(relay, receiver.origin, 1_500);
  await receiver.waitFor((r) => r.length >= 100, 20_000);
  const limit = await cli(relay, ['target', 'limit', receiver.origin, '--rate', '10/s', '--burst', '2']);
  expect(limit.code, limit.stderr).toBe(0);
  expect(limit.stdout).toContain(`${receiver.origin} limited to rate 10/s burst 2 (fleet-wide)`);
  const setAt = Date.now();
  // Within a few seconds every worker applies it; then 5 s at 10/s over the fleet (and its burst).
  await sleep(8_000);
  const limited = between(receiver.requests, setAt + 3_000, setAt + 8_000);
  expect(limited).toBeGreaterThan(0);
  expect(limited).toBeLessThanOrEqual(10 * 5 * 1.2 + 2);
  expect(receiver.requests.length).toBeLessThan(1_500);
  expect(firstAttempts(receiver.requests)).toBe(true);
  expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);

  const listed = await cli(relay, ['target', 'list']);
  expect(listed.stdout).toContain(`${receiver.origin}  limited to rate 10/s burst 2 since`);
}, 90_000);

it('a 429 with Retry-After: 2 pauses the target on every worker for about 2 s; the answered attempt counts as failed', async () => {
  let rejectedAt = 0;
  const receiver = await open.receiver((request) => {
    if (request.nth === 30) {
      rejectedAt = request.at;
      return { status: 429, headers: { 'retry-after': '2' } };
    }
    return { status: 200, delayMs: 20 };
  });
  const relay = await open.relay({ PREFETCH: '2', RETRY_SCHEDULE: '1s' });
  await relay.startWorker();
  await relay.startWorker();
  await publishMany(relay, receiver.origin, 200);
  await receiver.waitFor(() => rejectedAt > 0, 20_000);
  await receiver.waitFor((r) => r.length >= 60, 20_000);
  // Requests already under way when the 429 came (at most PREFETCH per worker) end, and the other worker
  // learns of the pause through P.control (hundreds of ms on a loaded machine); then nothing until Retry-After.
  const paused = between(receiver.requests, rejectedAt + 1_000, rejectedAt + 1_800);
  expect(paused).toBe(0);
  expect(between(receiver.requests, rejectedAt + 1_800, rejectedAt + 4_000)).toBeGreaterThan(0);
  await receiver.waitFor((r) => r.length === 201, 30_000);
  const retried = receiver.requests.filter((r) => r.headers['x-callback-attempt'] === '2');
  expect(retried).toHaveLength(1);
  expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
}, 90_000);

it('a limit from TARGET_LIMITS_FILE holds until an operator clears it on the control stream; then the backlog drains at full speed', async () => {
  const receiver = await open.receiver(() => ({ status: 200 }));
  const file = join(mkdtempSync(join(tmpdir(), 'limits-')), 'limits.json');
  writeFileSync(file, JSON.stringify({ [receiver.origin]: { rate: '2/s', burst: 1 } }));
  const relay = await open.relay({ TARGET_LIMITS_FILE: file });
  await relay.startWorker();
  await publishMany(relay, receiver.origin, 300);
  await sleep(3_000);
  expect(receiver.requests.length).toBeLessThanOrEqual(2 * 3 + 2);
  const cleared = await cli(relay, ['target', 'limit', receiver.origin, '--clear']);
  expect(cleared.code, cleared.stderr).toBe(0);
  // At 2/s the rest would take over two minutes.
  await receiver.waitFor((r) => r.length === 300, 20_000);
  expect(firstAttempts(receiver.requests)).toBe(true);
  expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
}, 90_000);

it('the workers know each other through P.presence: distinct ranks, a leaving worker counted out at once, a newcomer within a moment', async () => {
  const relay = await open.relay();
  const options = { urls: [relay.config.amqpUrl], names: relay.names, logger: createLogger('silent'), clock: Date.now };
  const fleet: FleetPresence[] = [];
  try {
    fleet.push(await startFleetPresence(options), await startFleetPresence(options));
    fleet.push(await startFleetPresence(options));
    // The newcomer learnt of the others from their answers to its hello; they of it from the hello. The grace
    // for a loaded broker stays short: given long enough, the others' heartbeats (every HEARTBEAT_MS) tell it too.
    await waitUntil(() => fleet[2]!.fleet.size === 3, 300);
    await waitUntil(() => fleet.every((one) => one.fleet.size === 3));
    expect(fleet.map((one) => one.fleet.rank).sort()).toEqual([0, 1, 2]);
    // Counted out by its bye: a worker that vanished would stay until EXPIRE_MS after its last heartbeat,
    // sent at most HEARTBEAT_MS before the bye, so never this soon after the close began.
    const closing = Date.now();
    await fleet.pop()!.close();
    await waitUntil(() => fleet.every((one) => one.fleet.size === 2), Math.max(0, EXPIRE_MS - HEARTBEAT_MS - 100 - (Date.now() - closing)));
    expect(fleet.map((one) => one.fleet.rank).sort()).toEqual([0, 1]);
  } finally {
    for (const one of fleet) await one.close();
  }
});

it('a worker with no limit to enforce consumes without waiting for the answers to its hello, and counts the others as they come', async () => {
  const relay = await open.relay();
  const options = { urls: [relay.config.amqpUrl], names: relay.names, logger: createLogger('silent'), clock: Date.now };
  const fleet: FleetPresence[] = [];
  try {
    fleet.push(await startFleetPresence(options));
    fleet.push(await startFleetPresence({ ...options, waitForOthers: false }));
    // Returned before it even connected: alone so far.
    expect(fleet[1]!.fleet.size).toBe(1);
    await waitUntil(() => fleet.every((one) => one.fleet.size === 2));
    expect(fleet.map((one) => one.fleet.rank).sort()).toEqual([0, 1]);
  } finally {
    for (const one of fleet) await one.close();
  }
});

async function waitUntil(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !condition();) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await sleep(20);
  }
}
