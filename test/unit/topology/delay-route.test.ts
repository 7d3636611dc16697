import { describe, it, expect } from 'vitest';
import { delayRoutingKey } from '../../../src/topology/delay-levels.js';
import { MAX_PLUGIN_DELAY_MS, deliveryRoute } from '../../../src/topology/delay-route.js';
import { topologyNames } from '../../../src/topology/topology-names.js';

const names = topologyNames('cr');
const immediate = { exchange: 'cr', routingKey: 'deliver.5', headers: {} };

describe('deliveryRoute in plugin mode', () => {
  it('routes a delayed message to the main exchange with an x-delay header and routing key due.<bucket> (into the classic P.due)', () => {
    expect(deliveryRoute(names, 'plugin', 15_000, 5)).toEqual({ exchange: 'cr', routingKey: 'due.5', headers: { 'x-delay': 15_000 } });
  });

  it('keeps sub-second precision, rounded to whole ms', () => {
    expect(deliveryRoute(names, 'plugin', 250, 5).headers).toEqual({ 'x-delay': 250 });
    expect(deliveryRoute(names, 'plugin', 1_234.6, 5).headers).toEqual({ 'x-delay': 1_235 });
  });

  it('uses the plain route for a zero, negative or sub-half-millisecond delay', () => {
    expect(deliveryRoute(names, 'plugin', 0, 5)).toEqual(immediate);
    expect(deliveryRoute(names, 'plugin', -100, 5)).toEqual(immediate);
    expect(deliveryRoute(names, 'plugin', 0.4, 5)).toEqual(immediate);
  });

  it('clamps x-delay to 2^32 − 1 ms', () => {
    expect(MAX_PLUGIN_DELAY_MS).toBe(4_294_967_295);
    expect(deliveryRoute(names, 'plugin', MAX_PLUGIN_DELAY_MS, 5).headers).toEqual({ 'x-delay': MAX_PLUGIN_DELAY_MS });
    expect(deliveryRoute(names, 'plugin', 2 ** 40, 5).headers).toEqual({ 'x-delay': MAX_PLUGIN_DELAY_MS });
  });
});

describe('deliveryRoute in queues mode', () => {
  it('routes a delayed message to P.delay with the binary routing key', () => {
    expect(deliveryRoute(names, 'queues', 15_000, 5)).toEqual({ exchange: 'cr.delay', routingKey: `${delayRoutingKey(15)}.5`, headers: {} });
  });

  it('never sets x-delay', () => {
    expect(deliveryRoute(names, 'queues', 60_000, 5).headers).toEqual({});
  });

  it('rounds the delay to the nearest second', () => {
    expect(deliveryRoute(names, 'queues', 500, 5).routingKey).toBe(`${delayRoutingKey(1)}.5`);
    expect(deliveryRoute(names, 'queues', 1_499, 5).routingKey).toBe(`${delayRoutingKey(1)}.5`);
    expect(deliveryRoute(names, 'queues', 1_500, 5).routingKey).toBe(`${delayRoutingKey(2)}.5`);
  });

  it('delivers no delay immediately, but waits at least a second for any positive one', () => {
    expect(deliveryRoute(names, 'queues', 0, 5)).toEqual(immediate);
    expect(deliveryRoute(names, 'queues', -1_000, 5)).toEqual(immediate);
    expect(deliveryRoute(names, 'queues', 499, 5)).toEqual({ exchange: names.delayExchange, routingKey: `${delayRoutingKey(1)}.5`, headers: {} });
  });

  it('clamps at the largest level delay', () => {
    expect(deliveryRoute(names, 'queues', 10 ** 12, 5).routingKey).toBe(`${delayRoutingKey(2 ** 22 - 1)}.5`);
  });

  it('carries the lane bucket as the last word of the key, and in the immediate route', () => {
    expect(deliveryRoute(names, 'queues', 3_000, 63).routingKey).toBe(`${delayRoutingKey(3)}.63`);
    expect(deliveryRoute(names, 'queues', 0, 63).routingKey).toBe('deliver.63');
    expect(deliveryRoute(names, 'plugin', 3_000, 0).routingKey).toBe('due.0');
  });

  it('uses the names of the given prefix', () => {
    const other = topologyNames('orders.hooks');
    expect(deliveryRoute(other, 'queues', 2_000, 0).exchange).toBe('orders.hooks.delay');
    expect(deliveryRoute(other, 'queues', 0, 0).exchange).toBe('orders.hooks');
  });
});
