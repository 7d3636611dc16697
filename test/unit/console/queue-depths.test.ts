import type { Channel } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { overviewPage, type OverviewData } from '../../../src/console/pages/overview-page.js';
import { queueDepthsOn, watchedQueues, type QueueDepth } from '../../../src/console/queue-depths.js';
import { topologyNames } from '../../../src/topology/topology-names.js';

const names = topologyNames('p', 2);

/** A broker that has `queues` (name → ready messages): a passive declare of any other is a 404 that closes the channel. */
function broker(queues: Record<string, number>): {
  connection: { createChannel(): Promise<Channel> };
  asked: string[];
  channels: () => number;
} {
  const asked: string[] = [];
  let channels = 0;
  const createChannel = async (): Promise<Channel> => {
    channels += 1;
    const checkQueue = async (queue: string) => {
      asked.push(queue);
      if (!(queue in queues)) throw Object.assign(new Error(`NOT_FOUND - no queue '${queue}'`), { code: 404 });
      return { queue, messageCount: queues[queue], consumerCount: 0 };
    };
    return { checkQueue, on: () => {}, close: async () => {} } as unknown as Channel;
  };
  return { connection: { createChannel }, asked, channels: () => channels };
}

/** A prefix in queues mode: its lanes, P.dead, P.paused and today's levels, `held` in some of them. */
const queuesMode = (held: Record<string, number> = {}): Record<string, number> => ({
  ...Object.fromEntries([...names.workQueues, names.deadQueue, names.pausedQueue, ...names.delayLevels].map((queue) => [queue, 0])),
  ...held,
});

describe('queueDepthsOn', () => {
  /** The watched queues other than today's levels, asked for first. */
  const others = watchedQueues(names)
    .filter(({ kind }) => kind !== 'delay level')
    .map(({ queue }) => queue);

  it('without earlier levels: asks for one probe queue per earlier version, not for their 100 queues', async () => {
    const { connection, asked, channels } = broker(queuesMode({ [names.delayLevel(4)]: 3 }));
    const depths = await queueDepthsOn(connection, names);
    expect(asked).toEqual([...others, 'p.delay.up.1s', 'p.delay.00', 'p.delay.1s', ...names.delayLevels]);
    // One channel, and one more after each missing queue (P.due and the two probes); one for today's levels.
    expect(channels()).toBe(5);
    expect(depths.filter(({ kind }) => kind === 'earlier delay level')).toEqual([]);
    expect(depths.find(({ queue }) => queue === 'p.delay.up.4s')).toEqual({
      queue: 'p.delay.up.4s',
      kind: 'delay level',
      messages: 3,
      consumers: 0,
    });
  });

  it("in plugin mode: asks for one of today's levels, not for all 78", async () => {
    const { connection, asked, channels } = broker(
      Object.fromEntries([...names.workQueues, names.dueQueue, names.deadQueue, names.pausedQueue].map((queue) => [queue, 1])),
    );
    const depths = await queueDepthsOn(connection, names);
    expect(asked).toEqual([...others, 'p.delay.up.1s', 'p.delay.00', 'p.delay.1s']);
    expect(asked.filter((queue) => names.delayLevels.includes(queue))).toHaveLength(1);
    // One channel, and one more after each of the three missing probes.
    expect(channels()).toBe(4);
    expect(depths.map(({ queue, kind }) => `${queue} ${kind}`)).toEqual([
      'p.work lane',
      'p.work.1 lane',
      'p.due due',
      'p.dead dead',
      'p.paused paused',
    ]);
  });

  it("in queues mode: lists all of today's levels, highest first, between the lanes and P.dead", async () => {
    const { connection } = broker(queuesMode({ [names.delayLevel(1)]: 5, [names.delayLevel(3145728)]: 7 }));
    const depths = await queueDepthsOn(connection, names);
    const level = (queue: string, messages = 0): QueueDepth => ({ queue, kind: 'delay level', messages, consumers: 0 });
    expect(depths).toEqual([
      { queue: 'p.work', kind: 'lane', messages: 0, consumers: 0 },
      { queue: 'p.work.1', kind: 'lane', messages: 0, consumers: 0 },
      level('p.delay.up.3145728s', 7),
      ...names.delayLevels.slice(1, -1).map((queue) => level(queue)),
      level('p.delay.up.1s', 5),
      { queue: 'p.dead', kind: 'dead', messages: 0, consumers: 0 },
      { queue: 'p.paused', kind: 'paused', messages: 0, consumers: 0 },
    ]);
    expect(depths.filter(({ kind }) => kind === 'delay level')).toHaveLength(78);
  });

  it("lists the levels of an earlier version that is still there, after today's and before P.dead, leaving out those deleted", async () => {
    const old = Object.fromEntries(names.highFirstLevels.queues.map((queue) => [queue, 0]));
    delete old['p.delay.3145728s'];
    const { connection } = broker(queuesMode({ ...old, 'p.delay.16s': 2 }));
    const depths = await queueDepthsOn(connection, names);
    const earlier = depths.filter(({ kind }) => kind === 'earlier delay level');
    expect(earlier.map(({ queue }) => queue)).toEqual(names.highFirstLevels.queues.slice(1));
    expect(earlier.find(({ queue }) => queue === 'p.delay.16s')?.messages).toBe(2);
    const kinds = depths.map(({ kind }) => kind);
    expect(kinds.lastIndexOf('delay level')).toBeLessThan(kinds.indexOf('earlier delay level'));
    expect(kinds.lastIndexOf('earlier delay level')).toBeLessThan(kinds.indexOf('dead'));
    // The version of one level per bit is not there: its queues are not asked for.
    expect(depths.some(({ queue }) => queue === 'p.delay.21')).toBe(false);
  });
});

describe("the overview's queues", () => {
  const page = (queues: QueueDepth[]): string => {
    const data: OverviewData = {
      series: [],
      queues,
      throughput: { current: 0, previous: 0 },
      targets: 0,
      historyMissing: false,
      historyReading: false,
      windowMinutes: 60,
    };
    return overviewPage({ title: 'Overview' }, data).text;
  };
  const level = (queue: string, kind: QueueDepth['kind'], messages: number): QueueDepth => ({ queue, kind, messages, consumers: 0 });

  it("shows the earlier version's levels that hold messages, like today's", () => {
    const text = page([
      level('p.delay.up.4s', 'delay level', 0),
      level('p.delay.16s', 'earlier delay level', 2),
      level('p.delay.1s', 'earlier delay level', 0),
    ]);
    expect(text).toContain('<td>p.delay.16s</td><td>earlier delay level</td>');
    expect(text).not.toContain('p.delay.1s');
    expect(text).not.toContain('p.delay.up.4s');
    expect(text).not.toContain('can be deleted');
  });

  it("says when the earlier version's levels are all empty, and so can be deleted", () => {
    expect(page([level('p.delay.16s', 'earlier delay level', 0)])).toContain(
      'The delay levels of an earlier version are empty: they can be deleted',
    );
    expect(page([level('p.delay.up.4s', 'delay level', 0)])).not.toContain('can be deleted');
  });
});
