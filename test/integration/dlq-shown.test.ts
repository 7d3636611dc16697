import { describe, expect, it, vi } from 'vitest';
import { openDeadQueueSession } from '../../src/dlq/dead-queue-session.js';
import { peekDead } from '../../src/dlq/list-dead.js';
import { purgeShown } from '../../src/dlq/purge-dead.js';
import { replayShown } from '../../src/dlq/replay-shown.js';
import { createLogger } from '../../src/logger.js';
import { HEADER } from '../../src/message/headers.js';
import { applyTopology, connectTopology } from '../../src/topology/connect-topology.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import type { RelayFixture } from '../support/relay.js';

const open = openedInEachTest();

/** A relay whose topology is declared first: P.dead and exchange P exist before any worker runs. */
async function relayWithTopology(): Promise<RelayFixture> {
  const fixture = await open.relay();
  const topology = await connectTopology(fixture.config, createLogger('silent'), new AbortController().signal);
  await applyTopology(topology.url, topology);
  return fixture;
}

/** Parks a callback in P.dead as a worker does, and waits until P.dead holds it. */
async function park(fixture: RelayFixture, id: string, reason = 'exhausted'): Promise<void> {
  const before = await fixture.messageCount(fixture.names.deadQueue);
  const body = Buffer.from(JSON.stringify({ id, url: `http://127.0.0.1:9/${id}`, body: { n: id } }));
  fixture.channel.sendToQueue(fixture.names.deadQueue, body, {
    persistent: true,
    contentType: 'application/json',
    messageId: id,
    headers: { [HEADER.reason]: reason },
  });
  await fixture.waitForDead(before + 1);
}

/** The ids in P.dead, in order, each put back. */
async function idsInDead(fixture: RelayFixture): Promise<string[]> {
  const session = await openDeadQueueSession(fixture.config);
  try {
    return (await peekDead(session, 1_000)).messages.map((m) => m.entry.id ?? '?');
  } finally {
    await session.close();
  }
}

async function withSession<T>(
  fixture: RelayFixture,
  use: (session: Awaited<ReturnType<typeof openDeadQueueSession>>) => Promise<T>,
): Promise<T> {
  const session = await openDeadQueueSession(fixture.config);
  try {
    return await use(session);
  } finally {
    await session.close();
  }
}

describe('purge and replay of exactly the messages shown', () => {
  it('purges the shown ids only: a callback parked after the page was shown stays, and so does one not shown', async () => {
    const relay = await relayWithTopology();
    for (const id of ['a', 'b', 'c']) await park(relay, id);
    // The page showed a and c; then d was parked.
    await park(relay, 'd');
    expect(await withSession(relay, (session) => purgeShown(session, ['a', 'c']))).toBe(2);
    expect(await idsInDead(relay)).toEqual(['b', 'd']);
  });

  it('refuses, purging nothing, when a shown message is held by another view, and says how many it found', async () => {
    const relay = await relayWithTopology();
    for (const id of ['a', 'b', 'c']) await park(relay, id);
    const other = await openDeadQueueSession(relay.config);
    const held = await other.channel.get(relay.names.deadQueue, { noAck: false });
    expect(held && JSON.parse(held.content.toString()).id).toBe('a');
    const refused = withSession(relay, (session) => purgeShown(session, ['a', 'b']));
    await expect(refused).rejects.toMatchObject({ code: 'CR_ERR_DEAD_CHANGED', message: expect.stringContaining('found 1 of the 2') });
    await other.close();
    // The held message is back once the requeue is committed (a quorum queue's Raft log).
    await vi.waitFor(async () => expect((await idsInDead(relay)).sort()).toEqual(['a', 'b', 'c']), { timeout: 10_000 });
  });

  it('replays the shown ids, leaving a canceled one unless asked, and a callback parked meanwhile', async () => {
    const relay = await relayWithTopology();
    await park(relay, 'x', 'canceled');
    await park(relay, 'y');
    await park(relay, 'late');
    const skipped = await withSession(relay, (session) => replayShown(session, ['x', 'y'], false));
    expect(skipped).toEqual({ replayed: 1, skippedCanceled: 1 });
    expect((await idsInDead(relay)).sort()).toEqual(['late', 'x']);
    expect(await withSession(relay, (session) => replayShown(session, ['x'], true))).toEqual({ replayed: 1, skippedCanceled: 0 });
    expect(await idsInDead(relay)).toEqual(['late']);
  });
});
