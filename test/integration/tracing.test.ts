import { afterEach, beforeEach, expect, it } from 'vitest';
import { SPAN_NAME } from '../../src/tracing/otel-tracing.js';
import { describeEachMode } from '../support/modes.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { startOtlpCollector, type ExportedSpan, type OtlpCollector } from '../support/otlp-collector.js';
import type { ReceivedRequest } from '../support/receiver.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PUBLISHER_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${PUBLISHER_SPAN}-01`;
const TRACESTATE = 'shop=checkout-7';
const SPAN_KIND = { client: 3, producer: 4 };
const STATUS_ERROR = 2;

const open = openedInEachTest();
/** The SDK reads its settings from the environment: each test sets them, and they are put back after it. */
const saved = { ...process.env };
const OTEL_KEYS = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_BSP_SCHEDULE_DELAY', 'OTEL_SDK_DISABLED'];
let collector: OtlpCollector | undefined;

beforeEach(() => {
  for (const key of OTEL_KEYS) delete process.env[key];
});
afterEach(async () => {
  for (const key of OTEL_KEYS) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
  await collector?.close();
  collector = undefined;
});

/** The parent span id a receiver was given, after checking the trace id. */
function parentIn(request: ReceivedRequest | undefined): string {
  const [version, traceId, parent, flags] = String(request?.headers.traceparent).split('-');
  expect({ version, traceId, flags }).toEqual({ version: '00', traceId: TRACE_ID, flags: '01' });
  return parent as string;
}

describeEachMode('tracing', (mode) => {
  it('with an OTLP endpoint: one trace from the publish through each attempt to the receiver, spans exported', async () => {
    collector = await startOtlpCollector();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = collector.origin;
    // Export within 100 ms instead of the default 5 s, so the test sees the spans soon.
    process.env.OTEL_BSP_SCHEDULE_DELAY = '100';
    const receiver = await open.receiver((request) => ({ status: request.nth === 1 ? 500 : 204 }));
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '3' });
    await relay.startWorker();
    // The callback's own traceparent header is replaced by the relay's, never sent twice.
    const { id } = await relay.publisher.publish(
      { url: `${receiver.origin}/traced`, body: { order: 7 }, headers: { Traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` } },
      { traceparent: TRACEPARENT, tracestate: TRACESTATE },
    );
    await receiver.waitFor((requests) => requests.length === 2, 15_000);

    const [first, retry] = receiver.requests;
    const parents = [parentIn(first), parentIn(retry)];
    expect(parents[0]).not.toBe(parents[1]);
    expect(parents).not.toContain(PUBLISHER_SPAN);
    expect([first?.headers.tracestate, retry?.headers.tracestate]).toEqual([TRACESTATE, TRACESTATE]);
    expect(first?.headers['x-callback-attempt']).toBe('1');
    expect(retry?.headers['x-callback-attempt']).toBe('2');

    const spansOf = (spans: ExportedSpan[], name: string): ExportedSpan[] =>
      spans.filter((span) => span.name === name && span.attributes['callback.id'] === id);
    await collector.waitFor((spans) => spansOf(spans, SPAN_NAME.publish).length === 1 && spansOf(spans, SPAN_NAME.attempt).length === 2);
    const [publish] = spansOf(collector.spans, SPAN_NAME.publish);
    expect(publish).toMatchObject({
      kind: SPAN_KIND.producer,
      traceId: TRACE_ID,
      parentSpanId: PUBLISHER_SPAN,
      serviceName: 'callback-relay',
      attributes: { 'messaging.system': 'rabbitmq', 'messaging.message.id': id, 'callback.target.origin': receiver.origin },
    });
    const attempts = spansOf(collector.spans, SPAN_NAME.attempt).sort(
      (a, b) => Number(a.attributes['callback.attempt']) - Number(b.attributes['callback.attempt']),
    );
    // Each attempt is a child of the publish, and is the parent the receiver was given.
    expect(attempts.map((span) => [span.traceId, span.parentSpanId, span.spanId])).toEqual([
      [TRACE_ID, publish?.spanId, parents[0]],
      [TRACE_ID, publish?.spanId, parents[1]],
    ]);
    expect(attempts[0]).toMatchObject({
      kind: SPAN_KIND.client,
      statusCode: STATUS_ERROR,
      attributes: {
        'callback.target.origin': receiver.origin,
        'callback.attempt': 1,
        'http.response.status_code': 500,
        'callback.outcome': 'retryable',
        'callback.next_delay_ms': 1_000,
      },
    });
    expect(attempts[1]).toMatchObject({
      kind: SPAN_KIND.client,
      attributes: { 'callback.attempt': 2, 'http.response.status_code': 204, 'callback.outcome': 'success' },
    });
    expect(attempts[1]?.attributes).not.toHaveProperty('callback.next_delay_ms');
    expect(attempts[1]?.statusCode).not.toBe(STATUS_ERROR);
  });

  it('without an endpoint: the published context reaches the receiver unchanged on every attempt', async () => {
    const receiver = await open.receiver((request) => ({ status: request.nth === 1 ? 503 : 200 }));
    const relay = await open.relay({ DELAY_MODE: mode, RETRY_SCHEDULE: '1s', MAX_ATTEMPTS: '3' });
    await relay.startWorker();
    await relay.publisher.publish(
      { url: `${receiver.origin}/plain`, body: null, headers: { tracestate: 'own=1' } },
      { traceparent: TRACEPARENT },
    );
    await receiver.waitFor((requests) => requests.length === 2, 15_000);
    for (const request of receiver.requests) {
      expect(request.headers.traceparent).toBe(TRACEPARENT);
      // A trace context is one unit: the callback's own tracestate does not ride along with another traceparent.
      expect(request.headers.tracestate).toBeUndefined();
    }
  });

  it('a callback published without a context keeps its own headers as they were', async () => {
    const receiver = await open.receiver(() => ({ status: 204 }));
    const relay = await open.relay({ DELAY_MODE: mode });
    await relay.startWorker();
    await relay.publisher.publish({ url: `${receiver.origin}/own`, body: 1, headers: { traceparent: TRACEPARENT } });
    await receiver.waitFor((requests) => requests.length === 1);
    expect(receiver.requests[0]?.headers.traceparent).toBe(TRACEPARENT);
  });
});
