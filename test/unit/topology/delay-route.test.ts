import { describe, it, expect } from 'vitest';
import { LEVEL_LEAD_MS, delayRoutingKey } from '../../../src/topology/delay-levels.js';
import { MAX_PLUGIN_DELAY_MS, deliveryRoute, topologyNames } from '../../../src/topology/topology-names.js';

const names = topologyNames('cr');
const immediate = { exchange: 'cr', routingKey: 'deliver.5', headers: {} };
const NOW = 1_700_000_000_000;
const dueIn = (ms: number): Record<string, unknown> => ({ 'x-callback-due-at': NOW + ms });

describe('deliveryRoute in plugin mode', () => {
  it('routes a delayed message to the main exchange with an x-delay header and routing key due.<bucket> (into the classic P.due)', () => {
    expect(deliveryRoute(names, 'plugin', 15_000, 5, NOW)).toEqual({ exchange: 'cr', routingKey: 'due.5', headers: { 'x-delay': 15_000 } });
  });

  it('keeps sub-second precision, rounded to whole ms', () => {
    expect(deliveryRoute(names, 'plugin', 250, 5, NOW).headers).toEqual({ 'x-delay': 250 });
    expect(deliveryRoute(names, 'plugin', 1_234.6, 5, NOW).headers).toEqual({ 'x-delay': 1_235 });
  });

  it('uses the plain route for a zero, negative or sub-half-millisecond delay', () => {
    expect(deliveryRoute(names, 'plugin', 0, 5, NOW)).toEqual(immediate);
    expect(deliveryRoute(names, 'plugin', -100, 5, NOW)).toEqual(immediate);
    expect(deliveryRoute(names, 'plugin', 0.4, 5, NOW)).toEqual(immediate);
  });

  it('clamps x-delay to 2^32 − 1 ms', () => {
    expect(MAX_PLUGIN_DELAY_MS).toBe(4_294_967_295);
    expect(deliveryRoute(names, 'plugin', MAX_PLUGIN_DELAY_MS, 5, NOW).headers).toEqual({ 'x-delay': MAX_PLUGIN_DELAY_MS });
    expect(deliveryRoute(names, 'plugin', 2 ** 40, 5, NOW).headers).toEqual({ 'x-delay': MAX_PLUGIN_DELAY_MS });
  });
});

describe('deliveryRoute in queues mode', () => {
  it('routes a delayed message to P.delay with the binary routing key and its due time', () => {
    expect(deliveryRoute(names, 'queues', 15_000, 5, NOW)).toEqual({
      exchange: 'cr.delay',
      routingKey: `${delayRoutingKey(14)}.5`,
      headers: dueIn(15_000),
    });
  });

  it('never sets x-delay', () => {
    expect(deliveryRoute(names, 'queues', 60_000, 5, NOW).headers).toEqual(dueIn(60_000));
  });

  it('leaves the levels between the lead and a second plus the lead early, whatever the sub-second part', () => {
    for (const delayMs of [1_250, 1_251, 1_499, 1_500, 2_249, 2_250, 37_000, 37_999, 86_400_123]) {
      const digits = deliveryRoute(names, 'queues', delayMs, 5, NOW)
        .routingKey.split('.')
        .slice(0, -1)
        .map((word) => word.slice(1))
        .join('');
      const early = delayMs - parseInt(digits, 16) * 1_000;
      expect(early, `${delayMs} ms`).toBeGreaterThanOrEqual(LEVEL_LEAD_MS);
      expect(early, `${delayMs} ms`).toBeLessThan(LEVEL_LEAD_MS + 1_000);
    }
  });

  it('delivers no delay immediately; a delay under one level goes to its lane with its due time', () => {
    expect(deliveryRoute(names, 'queues', 0, 5, NOW)).toEqual(immediate);
    expect(deliveryRoute(names, 'queues', -1_000, 5, NOW)).toEqual(immediate);
    expect(deliveryRoute(names, 'queues', 499, 5, NOW)).toEqual({ ...immediate, headers: dueIn(499) });
    expect(deliveryRoute(names, 'queues', 1_249, 5, NOW)).toEqual({ ...immediate, headers: dueIn(1_249) });
    expect(deliveryRoute(names, 'queues', 1_250, 5, NOW).routingKey).toBe(`${delayRoutingKey(1)}.5`);
  });

  it('clamps at the largest level delay', () => {
    expect(deliveryRoute(names, 'queues', 10 ** 12, 5, NOW).routingKey).toBe(`${delayRoutingKey(2 ** 22 - 1)}.5`);
  });

  it('carries the lane bucket as the last word of the key, and in the immediate route', () => {
    expect(deliveryRoute(names, 'queues', 3_000, 63, NOW).routingKey).toBe(`${delayRoutingKey(2)}.63`);
    expect(deliveryRoute(names, 'queues', 0, 63, NOW).routingKey).toBe('deliver.63');
    expect(deliveryRoute(names, 'plugin', 3_000, 0, NOW).routingKey).toBe('due.0');
  });

  it('uses the names of the given prefix', () => {
    const other = topologyNames('orders.hooks');
    expect(deliveryRoute(other, 'queues', 2_000, 0, NOW).exchange).toBe('orders.hooks.delay');
    expect(deliveryRoute(other, 'queues', 0, 0, NOW).exchange).toBe('orders.hooks');
  });
});
