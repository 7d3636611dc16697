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

  it('names delay levels with two digits', () => {
    expect(names.delayLevel(0)).toBe('callback-relay.delay.00');
    expect(names.delayLevel(7)).toBe('callback-relay.delay.07');
    expect(names.delayLevel(21)).toBe('callback-relay.delay.21');
  });

  it('lists all 22 levels, highest first', () => {
    expect(names.delayLevels).toHaveLength(22);
    expect(names.delayLevels[0]).toBe('callback-relay.delay.21');
    expect(names.delayLevels[21]).toBe('callback-relay.delay.00');
    expect(names.delayLevels).toEqual(Array.from({ length: 22 }, (_, i) => names.delayLevel(21 - i)));
  });

  it('gives every exchange and queue a distinct name', () => {
    const all = [names.exchange, names.workQueue, names.deadQueue, names.delayExchange, ...names.delayLevels];
    expect(new Set(all).size).toBe(all.length);
  });

  it('uses any prefix verbatim', () => {
    const other = topologyNames('a.b_c-1');
    expect(other.workQueue).toBe('a.b_c-1.work');
    expect(other.delayLevel(3)).toBe('a.b_c-1.delay.03');
  });
});
