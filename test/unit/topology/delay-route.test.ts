import { describe, it, expect } from 'vitest';
import { delayRoutingKey } from '../../../src/topology/delay-levels.js';
import { MAX_PLUGIN_DELAY_MS, deliveryRoute } from '../../../src/topology/delay-route.js';
import { topologyNames } from '../../../src/topology/topology-names.js';

const names = topologyNames('cr');
const immediate = { exchange: 'cr', routingKey: 'deliver', headers: {} };

describe('deliveryRoute in plugin mode', () => {
  it('routes a delayed message to the main exchange with an x-delay header and routing key due (into the classic P.due)', () => {
    expect(deliveryRoute(names, 'plugin', 15_000)).toEqual({ exchange: 'cr', routingKey: 'due', headers: { 'x-delay': 15_000 } });
  });

  it('keeps sub-second precision, rounded to whole ms', () => {
    expect(deliveryRoute(names, 'plugin', 250).headers).toEqual({ 'x-delay': 250 });
    expect(deliveryRoute(names, 'plugin', 1_234.6).headers).toEqual({ 'x-delay': 1_235 });
  });

  it('uses the plain route for a zero, negative or sub-half-millisecond delay', () => {
    expect(deliveryRoute(names, 'plugin', 0)).toEqual(immediate);
    expect(deliveryRoute(names, 'plugin', -100)).toEqual(immediate);
    expect(deliveryRoute(names, 'plugin', 0.4)).toEqual(immediate);
  });

  it('clamps x-delay to 2^32 − 1 ms', () => {
    expect(MAX_PLUGIN_DELAY_MS).toBe(4_294_967_295);
    expect(deliveryRoute(names, 'plugin', MAX_PLUGIN_DELAY_MS).headers).toEqual({ 'x-delay': MAX_PLUGIN_DELAY_MS });
    expect(deliveryRoute(names, 'plugin', 2 ** 40).headers).toEqual({ 'x-delay': MAX_PLUGIN_DELAY_MS });
  });
});

describe('deliveryRoute in queues mode', () => {
  it('routes a delayed message to P.delay with the binary routing key', () => {
    expect(deliveryRoute(names, 'queues', 15_000)).toEqual({ exchange: 'cr.delay', routingKey: delayRoutingKey(15), headers: {} });
  });

  it('never sets x-delay', () => {
    expect(deliveryRoute(names, 'queues', 60_000).headers).toEqual({});
  });

  it('rounds the delay to the nearest second', () => {
    expect(deliveryRoute(names, 'queues', 500).routingKey).toBe(delayRoutingKey(1));
    expect(deliveryRoute(names, 'queues', 1_499).routingKey).toBe(delayRoutingKey(1));
    expect(deliveryRoute(names, 'queues', 1_500).routingKey).toBe(delayRoutingKey(2));
  });

  it('delivers no delay immediately, but waits at least a second for any positive one', () => {
    expect(deliveryRoute(names, 'queues', 0)).toEqual(immediate);
    expect(deliveryRoute(names, 'queues', -1_000)).toEqual(immediate);
    expect(deliveryRoute(names, 'queues', 499)).toEqual({ exchange: names.delayExchange, routingKey: delayRoutingKey(1), headers: {} });
  });

  it('clamps at the largest level delay', () => {
    expect(deliveryRoute(names, 'queues', 10 ** 12).routingKey).toBe(delayRoutingKey(2 ** 22 - 1));
  });

  it('uses the names of the given prefix', () => {
    const other = topologyNames('orders.hooks');
    expect(deliveryRoute(other, 'queues', 2_000).exchange).toBe('orders.hooks.delay');
    expect(deliveryRoute(other, 'queues', 0).exchange).toBe('orders.hooks');
  });
});
