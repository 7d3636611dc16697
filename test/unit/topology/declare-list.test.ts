import { createHash } from 'node:crypto';
import type { Channel } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { declareDueQueue, topologyDeclarations, type TopologyOptions } from '../../../src/topology/declare-topology.js';
import { applyDeclarations, BINDING_CHANNELS, brokerFeatures } from '../../../src/topology/declare-list.js';
import { deleteTopology, teardownNames } from '../../../src/topology/teardown.js';
import { topologyNames } from '../../../src/topology/topology-names.js';

/** Writes down what a declare or teardown asks of the broker, in order. */
function recorder(): { channel: Channel; calls: unknown[][] } {
  const calls: unknown[][] = [];
  const record =
    (method: string) =>
    async (...args: unknown[]) =>
      void calls.push([method, ...args]);
  const channel = Object.fromEntries(
    ['assertQueue', 'assertExchange', 'bindQueue', 'deleteQueue', 'deleteExchange'].map((m) => [m, record(m)]),
  );
  return { channel: channel as unknown as Channel, calls };
}

const options = (variant: Partial<TopologyOptions>): TopologyOptions => ({
  names: topologyNames('p', 2),
  mode: 'queues',
  queueType: 'quorum',
  deliveryLimit: 5,
  broker: brokerFeatures('3.13.0'),
  ...variant,
});

async function declared(variant: Partial<TopologyOptions>): Promise<unknown[][]> {
  const { channel, calls } = recorder();
  const topology = options(variant);
  await applyDeclarations(channel, topologyDeclarations(topology));
  if (topology.mode === 'plugin') await declareDueQueue(channel, topology.names);
  return calls;
}

const digest = (calls: unknown[][]): string => createHash('sha256').update(JSON.stringify(calls)).digest('hex').slice(0, 16);

// Running deployments depend on every name, argument and binding: the broker refuses a declaration
// that differs from what exists. The digests pin what the releases before the declare list asked of the
// broker, call for call (some 2,500 in queues mode), with P.control, P.paused and P.paused.check since
// cancel and pause; a change here must be deliberate. P.paused.check gained its delivery limit and
// dead-letter target (a queue's arguments cannot change in place: an older one is deleted once empty). Queues mode's
// delay levels went from one per bit to radix 16, then from highest digit first to lowest digit first
// (new names each time; the old ones are retired at start by retire-earlier-levels.ts, never redeclared).
// Then the delay exchanges gained the bindings of the hex keys beside the binary ones, which stay as
// they were (the second digest: every call but those). Then ordered delivery added its shards, their
// bindings on P and the delay routes back into them (`o<bucket>` keys, `due.o<bucket>`), and their log
// streams; every other call is as it was (the digests of every call but the ordered ones).
describe('the topology a prefix declares', () => {
  /** A call of ordered delivery: a shard or log, a binding to a shard, or P.due's binding of an ordered bucket. */
  const orderedCall = ([method, name, , key]: unknown[]): boolean =>
    String(name).startsWith('p.ordered.') || (method === 'bindQueue' && /^due\.o\d+$/.test(String(key)));

  /** A binding of a hex delay key: at most 8 words, those before the last x0 … xf, * or #, one of them x0 … xf or 6 or more. */
  const hexBinding = ([method, , , key]: unknown[]): boolean => {
    if (method !== 'bindQueue') return false;
    const words = String(key).split('.');
    const digitWords = words.slice(0, -1);
    return (
      words.length <= 8 &&
      digitWords.every((word) => /^(x[0-9a-f]|\*|#)$/.test(word)) &&
      (words.length >= 6 || digitWords.some((word) => word.startsWith('x')))
    );
  };

  it.each([
    ['queues mode, quorum, 3 lanes', { names: topologyNames('p', 3) }, '801d1f67f60e3ff4', 'a1753811e45a7441', '6f88a9685d5b4294'],
    [
      'queues mode, classic, history on',
      { queueType: 'classic', history: { maxAge: '7D' } },
      '0d8ce1034b2f327d',
      '57c01d5f732882e2',
      '457bc8ce0cb3bbca',
    ],
    [
      'queues mode, quorum on a 3.9 broker',
      { broker: brokerFeatures('3.9.0') },
      '2dea52d69b55a0c1',
      'dafc1857131c43c6',
      '1e256d377a568a4d',
    ],
    [
      'plugin mode, quorum, history on',
      { mode: 'plugin', history: { maxAge: '12h' } },
      '7ccd07a96190ff79',
      '9d686688e3c2459b',
      '9d686688e3c2459b',
    ],
  ] as [string, Partial<TopologyOptions>, string, string, string][])(
    '%s: the same declarations, in the same order',
    async (_name, variant, expected, withoutOrdered, withoutOrderedOrHex) => {
      const calls = await declared(variant);
      expect(digest(calls)).toBe(expected);
      const before = calls.filter((call) => !orderedCall(call));
      expect(digest(before)).toBe(withoutOrdered);
      expect(digest(before.filter((call) => !hexBinding(call)))).toBe(withoutOrderedOrHex);
    },
  );

  it('declares the ordered shards like the lanes, with a single active consumer, each bucket bound to its shard, and a log stream per shard', async () => {
    const calls = await declared({ names: topologyNames('p', 2, 3) });
    const args = (queue: string) =>
      (calls.find(([method, name]) => method === 'assertQueue' && name === queue)?.[2] as { arguments: unknown }).arguments;
    expect(args('p.ordered.2')).toEqual({ ...(args('p.work.1') as object), 'x-single-active-consumer': true });
    expect(
      calls.filter(([method, name]) => method === 'assertQueue' && String(name).startsWith('p.ordered.')).map(([, name]) => name),
    ).toEqual(['p.ordered.0', 'p.ordered.1', 'p.ordered.2', 'p.ordered.log.0', 'p.ordered.log.1', 'p.ordered.log.2']);
    expect(args('p.ordered.log.0')).toEqual({ 'x-queue-type': 'stream', 'x-max-age': '30D', 'x-stream-max-segment-size-bytes': 8_000_000 });
    const bound = (key: string) =>
      calls.filter(([method, , , k]) => method === 'bindQueue' && k === key).map(([, queue, exchange]) => [queue, exchange]);
    expect(bound('ordered.0')).toEqual([['p.ordered.0', 'p']]);
    expect(bound('ordered.63')).toEqual([['p.ordered.0', 'p']]);
    expect(bound('ordered.5')).toEqual([['p.ordered.2', 'p']]);
    // Queues mode: the last delay exchanges bind an ordered bucket's word to its shard, hex keys only.
    expect(bound('x0.x0.x0.x0.x0.x0.o5')).toEqual([['p.ordered.2', 'p.delay']]);
    expect(bound('*.*.*.*.*.*.o5')).toEqual([['p.ordered.2', 'p.delay.up.above.1048576s']]);
    expect(calls.some(([method, , , key]) => method === 'bindQueue' && /^(\*\.){22}o5$/.test(String(key)))).toBe(false);
    // Plugin mode: P.due takes `due.o<bucket>` beside `due.<bucket>`.
    const plugin = await declared({ mode: 'plugin' });
    expect(plugin).toContainEqual(['bindQueue', 'p.due', 'p', 'due.o63']);
    expect(plugin).toContainEqual(['bindQueue', 'p.due', 'p', 'due.63']);
  });

  it('declares the consumed queues with their dead-letter target and delivery limit, and P.dead practically unlimited', async () => {
    const calls = await declared({});
    const args = (queue: string) =>
      (calls.find(([method, name]) => method === 'assertQueue' && name === queue)?.[2] as { arguments: unknown }).arguments;
    expect(args('p.work.1')).toEqual({
      'x-queue-type': 'quorum',
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': 'p.dead',
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
      'x-delivery-limit': 5,
    });
    expect(args('p.dead')).toEqual({ 'x-queue-type': 'quorum', 'x-delivery-limit': 1_000_000 });
    // Consumed by the fleet's recirculation: RabbitMQ 4's default limit of 20 and no target dropped held callbacks.
    expect(args('p.paused.check')).toEqual({
      'x-queue-type': 'quorum',
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': 'p.dead',
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
      'x-delivery-limit': 1_000_000,
      'x-single-active-consumer': true,
    });
    expect(calls.find(([method, name]) => method === 'assertExchange' && name === 'p')).toEqual([
      'assertExchange',
      'p',
      'direct',
      { durable: true },
    ]);
  });

  it('declares a delay level as the version before did, but for its name and its dead-letter exchange', async () => {
    const calls = await declared({});
    const args = (queue: string) =>
      (calls.find(([method, name]) => method === 'assertQueue' && name === queue)?.[2] as { arguments: unknown }).arguments;
    expect(args('p.delay.up.32s')).toEqual({
      'x-queue-type': 'quorum',
      'x-message-ttl': 32_000,
      'x-dead-letter-exchange': 'p.delay.up.above.16s',
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
    });
  });

  it('declares each queue before any binding to it', async () => {
    const calls = await declared({ history: { maxAge: '7D' } });
    const seen = new Set<unknown>();
    for (const [method, name] of calls) {
      if (method === 'assertQueue') seen.add(name);
      if (method === 'bindQueue') expect(seen).toContain(name);
    }
  });

  it("the teardown deletes every queue and exchange any variant declares, the earlier versions' delay levels, the legacy P.lanes and the workers' P.presence", async () => {
    const names = topologyNames('p', 2);
    const everything = [...(await declared({ history: { maxAge: '7D' } })), ...(await declared({ mode: 'plugin' }))];
    const { channel, calls } = recorder();
    await deleteTopology(channel, names);
    const deleted = (method: string) => new Set(calls.filter(([m]) => m === method).map(([, name]) => name));
    const made = (method: string) => new Set(everything.filter(([m]) => m === method).map(([, name]) => name));
    const earlier = [names.binaryLevels, names.highFirstLevels];
    expect(deleted('deleteQueue')).toEqual(new Set([...made('assertQueue'), ...earlier.flatMap((levels) => levels.queues)]));
    expect(deleted('deleteExchange')).toEqual(
      new Set([...made('assertExchange'), ...earlier.flatMap((levels) => levels.exchanges), names.lanesExchange, names.presenceExchange]),
    );
    // The lanes, P.slow, P.due, P.dead, P.history, P.control, P.paused, P.paused.check, the ordered shards and
    // their logs, the delay levels and the two earlier versions'.
    expect(teardownNames(names).queues).toHaveLength(
      names.workQueues.length + 7 + 2 * names.orderedQueues.length + names.delayLevels.length + 22 + 78,
    );
    expect(deleted('deleteExchange')).toContain('p.delay.below.16s');
  });
});

describe('applyDeclarations with more channels', () => {
  it('declares exchanges and queues first, in order, then every binding once, spread over BINDING_CHANNELS channels', async () => {
    const first = recorder();
    const extra: ReturnType<typeof recorder>[] = [];
    let closed = 0;
    const declarations = topologyDeclarations(options({}));
    await applyDeclarations(first.channel, declarations, async () => {
      const more = recorder();
      extra.push(more);
      return Object.assign(more.channel, { close: async () => void (closed += 1) });
    });
    expect(extra).toHaveLength(BINDING_CHANNELS - 1);
    expect(closed).toBe(BINDING_CHANNELS - 1);
    const nonBindings = declarations.filter((step) => step.kind !== 'binding').length;
    expect(first.calls.slice(0, nonBindings).every(([method]) => method !== 'bindQueue')).toBe(true);
    const bindings = [first, ...extra].flatMap(({ calls }) => calls.filter(([method]) => method === 'bindQueue'));
    expect(bindings).toHaveLength(declarations.length - nonBindings);
    expect(new Set(bindings.map((call) => JSON.stringify(call))).size).toBe(bindings.length);
    expect(extra.every(({ calls }) => calls.length > 0 && calls.every(([method]) => method === 'bindQueue'))).toBe(true);
  });

  it('declares every binding on the channels that opened when the broker allows fewer, and closes those', async () => {
    const first = recorder();
    const extra: ReturnType<typeof recorder>[] = [];
    let closed = 0;
    let asked = 0;
    const declarations = topologyDeclarations(options({}));
    await applyDeclarations(first.channel, declarations, async () => {
      asked += 1;
      if (asked > 2) throw new Error('No channels left to allocate');
      const more = recorder();
      extra.push(more);
      return Object.assign(more.channel, { close: async () => void (closed += 1) });
    });
    expect(extra).toHaveLength(2);
    expect(closed).toBe(2);
    const bindings = [first, ...extra].flatMap(({ calls }) => calls.filter(([method]) => method === 'bindQueue'));
    expect(bindings).toHaveLength(declarations.filter((step) => step.kind === 'binding').length);
    expect(new Set(bindings.map((call) => JSON.stringify(call))).size).toBe(bindings.length);
  });
});
