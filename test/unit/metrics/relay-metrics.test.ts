import { describe, expect, it } from 'vitest';
import type { AttemptReport, TriedReport } from '../../../src/reports.js';
import { createRelayMetrics } from '../../../src/metrics/relay-metrics.js';
import type { Decision } from '../../../src/policy/decide.js';
import { TargetIsolation } from '../../../src/isolation/target-isolation.js';
import { POLICY } from '../isolation/isolation-policy.js';

const report = (status: number, body: string, decision: Decision): TriedReport => ({
  kind: 'attempt',
  id: 'c1',
  url: 'https://example.com/hook',
  target: 'https://example.com',
  lane: '0',
  attempt: 1,
  outcome: { status, body, durationMs: 5 },
  decision,
  nextAttemptAt: undefined,
});

async function counted(reports: AttemptReport[], metric: string, label: string): Promise<Record<string, number>> {
  const metrics = createRelayMetrics(() => undefined);
  for (const one of reports) metrics.observer.reported(one);
  const { values } = await metrics.registry.getSingleMetric(metric)!.get();
  return Object.fromEntries(values.map(({ labels, value }) => [String(labels[label]), value]));
}

const results = (reports: AttemptReport[]) => counted(reports, 'callback_relay_attempts_total', 'result');

describe('relay metrics: attempt results', () => {
  const retry: Decision = { kind: 'retry', delayMs: 1_000, attempt: 2, why: 'HTTP 200 without the expected success body' };

  it("follow the decision, so the success body that applied (the worker's or a policy's) decides", async () => {
    expect(await results([report(200, 'ok', { kind: 'ack' })])).toEqual({ success: 1 });
    // A policy requiring "success" retried the "ok" answer.
    expect(await results([report(200, 'ok', retry)])).toEqual({ retryable: 1 });
    expect(await results([report(404, '', { kind: 'dead', reason: 'rejected', why: 'HTTP 404' }), report(503, '', retry)])).toEqual({
      terminal: 1,
      retryable: 1,
    });
  });

  it('count a callback out of attempts as retryable, and a forbidden target as terminal', async () => {
    const exhausted = report(503, '', { kind: 'dead', reason: 'exhausted', why: 'HTTP 503' });
    const forbidden = report(0, '', { kind: 'dead', reason: 'forbidden-target', why: 'forbidden' });
    expect(await results([exhausted, forbidden])).toEqual({ retryable: 1, terminal: 1 });
  });
});

describe('relay metrics: report kinds', () => {
  it('a canceled callback counts no attempt, only its outcome', async () => {
    const canceled: AttemptReport = {
      kind: 'canceled',
      id: 'c1',
      url: 'https://example.com/hook',
      target: 'https://example.com',
      lane: '0',
      attempt: 2,
    };
    expect(await results([canceled])).toEqual({});
    expect(await counted([canceled], 'callback_relay_callbacks_total', 'reason')).toEqual({ canceled: 1 });
    expect(await counted([{ kind: 'invalid', id: 'x', error: 'not JSON' }], 'callback_relay_callbacks_total', 'reason')).toEqual({
      invalid: 1,
    });
  });

  it('a held callback counts nothing: it is counted when attempted after the resume', async () => {
    const held: AttemptReport = {
      kind: 'held',
      id: 'c1',
      url: 'https://example.com/hook',
      target: 'https://example.com',
      lane: '0',
      attempt: 0,
    };
    expect(await results([held])).toEqual({});
    expect(await counted([held], 'callback_relay_callbacks_total', 'outcome')).toEqual({});
  });
});

describe('relay metrics: limits', () => {
  it("show each limited target's rate and back-off, its starts and the waits for its limit, with a bounded label count", async () => {
    const iso = new TargetIsolation<string>(POLICY);
    iso.setLimit('https://a.example', { rate: 10, burst: 1 }, Date.now());
    for (let i = 0; i < 3; i++) iso.offer('https://a.example', `a${i}`, 'overflow', Date.now() - 2_000);
    while (iso.next(Date.now())) {
      // starts one: the bucket holds one token
    }
    iso.shareBackoff({ target: 'https://b.example', factor: 1, untilMs: Date.now() + 60_000 }, Date.now());
    const metrics = createRelayMetrics(() => iso);
    const value = async (name: string) => (await metrics.registry.getSingleMetric(name)!.get()).values;
    expect((await value('callback_relay_target_limit_rate')).map(({ labels, value: v }) => [labels.target, v])).toEqual([
      ['https://a.example', 10],
    ]);
    expect((await value('callback_relay_target_limit_factor')).map(({ labels, value: v }) => [labels.target, labels.paused, v])).toEqual([
      ['https://a.example', 'false', 1],
      ['https://b.example', 'true', 1],
    ]);
    expect((await value('callback_relay_limited_attempts_total')).map(({ labels, value: v }) => [labels.target, v])).toEqual([
      ['https://a.example', 1],
    ]);
    const waits = await value('callback_relay_limit_wait_seconds');
    expect(
      waits.find((sample) => (sample as { metricName?: string }).metricName === 'callback_relay_limit_wait_seconds_count')?.value,
    ).toBe(1);
    expect(waits.find((sample) => sample.labels.le === 1)?.value).toBe(0);
  });
});

describe('relay metrics: in flight', () => {
  it('callback_relay_in_flight shows the messages in flight when scraped', async () => {
    const metrics = createRelayMetrics(() => undefined);
    const read = async (): Promise<number | undefined> =>
      (await metrics.registry.getSingleMetric('callback_relay_in_flight')!.get()).values[0]?.value;
    expect(await read()).toBe(0);
    metrics.observer.inFlight(1);
    metrics.observer.inFlight(1);
    metrics.observer.inFlight(-1);
    expect(await read()).toBe(1);
    metrics.observer.inFlight(-1);
    expect(await read()).toBe(0);
  });
});
