import { describe, expect, it } from 'vitest';
import { isRelayError } from '../../../src/errors.js';
import { createLogger } from '../../../src/logger.js';
import { attemptResult, publishAttributes } from '../../../src/tracing/span-attributes.js';
import { loadTracing } from '../../../src/tracing/tracing.js';

describe('attemptResult', () => {
  it('success: the status, no error', () => {
    expect(attemptResult({ outcome: { status: 204, durationMs: 3 }, decision: { kind: 'ack' } })).toEqual({
      attributes: { 'callback.outcome': 'success', 'http.response.status_code': 204 },
      error: undefined,
    });
  });

  it('retryable: the next delay, and the status as error type', () => {
    const { attributes, error } = attemptResult({
      outcome: { status: 503, durationMs: 3 },
      decision: { kind: 'retry', delayMs: 1_000, attempt: 2, why: 'HTTP 503' },
    });
    expect(attributes).toEqual({
      'callback.outcome': 'retryable',
      'http.response.status_code': 503,
      'callback.next_delay_ms': 1_000,
      'error.type': '503',
    });
    expect(error).toBe('HTTP 503');
  });

  it('a network error with no attempts left is retryable, dead-lettered as exhausted', () => {
    const { attributes, error } = attemptResult({
      outcome: { error: 'ECONNREFUSED: connect refused', durationMs: 1 },
      decision: { kind: 'dead', reason: 'exhausted', why: 'ECONNREFUSED' },
    });
    expect(attributes).toEqual({ 'callback.outcome': 'retryable', 'callback.dead_reason': 'exhausted', 'error.type': 'ECONNREFUSED' });
    expect(error).toBe('ECONNREFUSED: connect refused');
  });

  it('terminal: a final answer', () => {
    expect(
      attemptResult({ outcome: { status: 404, durationMs: 1 }, decision: { kind: 'dead', reason: 'rejected', why: 'HTTP 404' } })
        .attributes,
    ).toMatchObject({ 'callback.outcome': 'terminal', 'callback.dead_reason': 'rejected' });
  });
});

describe('publishAttributes', () => {
  it('follows the messaging conventions, with the delay only when there is one', () => {
    expect(publishAttributes('a', 'https://x.test', 0)).toEqual({
      'messaging.system': 'rabbitmq',
      'messaging.operation.type': 'send',
      'messaging.message.id': 'a',
      'callback.id': 'a',
      'callback.target.origin': 'https://x.test',
    });
    expect(publishAttributes('a', 'https://x.test', 500)).toMatchObject({ 'callback.delay_ms': 500 });
  });
});

describe('loadTracing', () => {
  const logger = createLogger('silent');

  it('is off, without loading anything, when no endpoint is set or the SDK is disabled', () => {
    expect(loadTracing(logger, {})).toBeUndefined();
    expect(loadTracing(logger, { OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBeUndefined();
    expect(loadTracing(logger, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
  });

  it('names the setting and the value of an endpoint that is not a URL', () => {
    try {
      loadTracing(logger, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318' });
      expect.unreachable();
    } catch (error) {
      expect(isRelayError(error, 'CR_ERR_CONFIG')).toBe(true);
      expect((error as Error).message).toContain('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
      expect((error as Error).message).toContain('collector:4318');
    }
  });
});
