import { describe, it, expect } from 'vitest';
import { topologyNames } from '../../../src/topology/topology-names.js';

describe('topologyNames', () => {
  const names = topologyNames('callback-relay');

  it('derives the exchange, work, dead and delay names from the prefix', () => {
    expect(names.exchange).toBe('callback-relay');
    expect(names.routingKey).toBe('deliver');
    expect(names.workQueue).toBe('callback-relay.work');
    expect(names.deadQueue).toBe('callback-relay.dead');
    expect(names.delayExchange).toBe('callback-relay.delay');
  });

  it('names each delay level by its wait, and each level exchange by the digit whose levels it takes, what remains being above it', () => {
    expect(names.delayLevel(1)).toBe('callback-relay.delay.up.1s');
    expect(names.delayLevel(240)).toBe('callback-relay.delay.up.240s');
    expect(names.delayLevelExchange(0)).toBe('callback-relay.delay.up.above.1s');
    expect(names.delayLevelExchange(1)).toBe('callback-relay.delay.up.above.16s');
    expect(names.delayLevelExchange(5)).toBe('callback-relay.delay.up.above.1048576s');
  });

  it('lists all 78 levels, highest first', () => {
    expect(names.delayLevels).toHaveLength(78);
    expect(names.delayLevels[0]).toBe('callback-relay.delay.up.3145728s');
    expect(names.delayLevels.at(-1)).toBe('callback-relay.delay.up.1s');
  });

  it("keeps the names of an earlier version's one-level-per-bit queues and exchanges, for the teardown", () => {
    expect(names.binaryLevels.queues).toHaveLength(22);
    expect(names.binaryLevels.queues[0]).toBe('callback-relay.delay.21');
    expect(names.binaryLevels.queues[21]).toBe('callback-relay.delay.00');
    expect(names.binaryLevels.exchanges).toEqual(names.binaryLevels.queues.slice(1));
  });

  it("keeps the names of an earlier version's radix-16 levels visited highest first, for the upgrade and the teardown", () => {
    expect(names.highFirstLevels.queues).toHaveLength(78);
    expect(names.highFirstLevels.queues[0]).toBe('callback-relay.delay.3145728s');
    expect(names.highFirstLevels.queues.at(-1)).toBe('callback-relay.delay.1s');
    expect(names.highFirstLevels.queue(240)).toBe('callback-relay.delay.240s');
    expect(names.highFirstLevels.exchange(1)).toBe('callback-relay.delay.below.16s');
    expect(names.highFirstLevels.exchanges).toEqual([0, 1, 2, 3, 4, 5].map(names.highFirstLevels.exchange));
  });

  it('gives every exchange and queue a distinct name', () => {
    const all = [
      ...[
        names.exchange,
        names.workQueue,
        names.deadQueue,
        names.delayExchange,
        ...names.delayLevels,
        ...[0, 1, 2, 3, 4, 5].map(names.delayLevelExchange),
      ],
      ...[...names.binaryLevels.queues, ...names.highFirstLevels.queues, ...names.highFirstLevels.exchanges],
    ];
    expect(new Set(all).size).toBe(all.length);
  });

  it('uses any prefix verbatim', () => {
    const other = topologyNames('a.b_c-1');
    expect(other.workQueue).toBe('a.b_c-1.work');
    expect(other.delayLevel(3)).toBe('a.b_c-1.delay.up.3s');
  });
});
