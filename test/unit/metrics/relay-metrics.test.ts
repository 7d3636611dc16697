import { describe, expect, it } from 'vitest';
import type { AttemptReport } from '../../../src/consumer/observer.js';
import { createRelayMetrics } from '../../../src/metrics/relay-metrics.js';
import type { Decision } from '../../../src/policy/decide.js';

const report = (status: number, body: string, decision: Decision): AttemptReport => ({
  id: 'c1',
  url: 'https://example.com/hook',
  target: 'https://example.com',
  lane: '0',
  attempt: 1,
  outcome: { status, body, durationMs: 5 },
  decision,
  nextAttemptAt: undefined,
});

async function results(successBody: string, reports: AttemptReport[]): Promise<Record<string, number>> {
  const metrics = createRelayMetrics(successBody, () => undefined);
  for (const one of reports) metrics.observer.attempted(one);
  const { values } = await metrics.registry.getSingleMetric('callback_relay_attempts_total')!.get();
  return Object.fromEntries(values.map(({ labels, value }) => [String(labels.result), value]));
}

describe('relay metrics: attempt results', () => {
  const retry: Decision = { kind: 'retry', delayMs: 1_000, attempt: 2, why: 'HTTP 200 without the expected success body' };

  it('follow the success body that applied, the worker\'s or a retry policy\'s', async () => {
    // The worker requires "success"; a policy accepting any 2xx acked the "ok" answer.
    expect(await results('success', [report(200, 'ok', { kind: 'ack' })])).toEqual({ success: 1 });
    // The worker accepts any 2xx; a policy requiring "success" retried the "ok" answer.
    expect(await results('', [report(200, 'ok', retry)])).toEqual({ retryable: 1 });
    expect(await results('', [report(404, '', { kind: 'dead', reason: 'rejected', why: 'HTTP 404' }), report(503, '', retry)])).toEqual({ terminal: 1, retryable: 1 });
  });
});
