import { Counter, Gauge } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createRegistry, metricNames, metricsText } from '../../../src/metrics/registry.js';

function registryWithTwo() {
  const registry = createRegistry();
  new Counter({ name: 'relay_moves_total', help: 'moves', labelNames: ['kind'], registers: [registry] }).inc({ kind: 'overflow' }, 3);
  new Gauge({ name: 'relay_in_flight', help: 'in flight', registers: [registry] }).set(7);
  return registry;
}

describe('metricsText', () => {
  it('gives every metric, Node defaults included, when no name is asked for', async () => {
    const text = await metricsText(registryWithTwo());
    expect(text).toContain('relay_moves_total{kind="overflow"} 3');
    expect(text).toContain('relay_in_flight 7');
    expect(text).toContain('process_cpu_user_seconds_total');
  });

  it('gives only the named metrics, in Prometheus text format, and nothing for an unknown name', async () => {
    const text = await metricsText(registryWithTwo(), ['relay_in_flight', 'no_such_metric', 'relay_moves_total', 'relay_in_flight']);
    expect(text).toBe(
      '# HELP relay_in_flight in flight\n# TYPE relay_in_flight gauge\nrelay_in_flight 7\n' +
        '# HELP relay_moves_total moves\n# TYPE relay_moves_total counter\nrelay_moves_total{kind="overflow"} 3\n',
    );
    expect(await metricsText(registryWithTwo(), ['no_such_metric'])).toBe('');
  });
});

describe('metricNames', () => {
  it('reads every name parameter of a request URL', () => {
    expect(metricNames('/metrics?name=a&name=b%5Fc&other=x')).toEqual(['a', 'b_c']);
    expect(metricNames('/metrics')).toEqual([]);
    expect(metricNames(undefined)).toEqual([]);
    expect(metricNames('http://[')).toEqual([]);
  });
});
