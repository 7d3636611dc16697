import { describe, it, expect } from 'vitest';
import { classifyOutcome, type DeliveryOutcome } from '../../../src/policy/classify-outcome.js';

const answer = (status: number, extra: Partial<DeliveryOutcome> = {}): DeliveryOutcome => ({ status, durationMs: 5, ...extra });

describe('classifyOutcome', () => {
  it.each([200, 201, 202, 204, 299])('treats %i as success', (status) => {
    expect(classifyOutcome(answer(status))).toEqual({ kind: 'success' });
  });

  it.each([300, 301, 302, 304, 307, 308, 400, 401, 403, 404, 405, 409, 410, 413, 422, 451, 499])('treats %i as terminal', (status) => {
    expect(classifyOutcome(answer(status))).toEqual({ kind: 'terminal', why: `HTTP ${status}` });
  });

  it.each([408, 429, 500, 502, 503, 504, 599])('treats %i as retryable', (status) => {
    expect(classifyOutcome(answer(status))).toEqual({ kind: 'retryable', why: `HTTP ${status}` });
  });

  it.each([100, 101, 199])('treats the informational %i as terminal', (status) => {
    expect(classifyOutcome(answer(status)).kind).toBe('terminal');
  });

  it('treats a network error as retryable, giving the error as the reason', () => {
    expect(classifyOutcome({ error: 'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:9', durationMs: 1 })).toEqual({
      kind: 'retryable',
      why: 'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:9',
    });
    expect(classifyOutcome({ error: 'TIMEOUT: no complete answer within 10000ms', durationMs: 10_000 }).kind).toBe('retryable');
  });

  it('treats a missing status without an error as retryable', () => {
    expect(classifyOutcome({ durationMs: 0 })).toEqual({ kind: 'retryable', why: 'no response' });
  });

  it('prefers the status when both a status and an error are present', () => {
    expect(classifyOutcome({ status: 404, error: 'ECONNRESET', durationMs: 1 }).kind).toBe('terminal');
  });
});

describe('classifyOutcome with a required success body', () => {
  it('succeeds when the body equals the expected text', () => {
    expect(classifyOutcome(answer(200, { body: 'success' }), 'success')).toEqual({ kind: 'success' });
  });

  it('trims the body before comparing', () => {
    expect(classifyOutcome(answer(200, { body: '  success\r\n' }), 'success')).toEqual({ kind: 'success' });
    expect(classifyOutcome(answer(201, { body: '\tsuccess ' }), 'success')).toEqual({ kind: 'success' });
  });

  it('is case-sensitive and requires the whole body', () => {
    expect(classifyOutcome(answer(200, { body: 'Success' }), 'success').kind).toBe('retryable');
    expect(classifyOutcome(answer(200, { body: 'success!' }), 'success').kind).toBe('retryable');
    expect(classifyOutcome(answer(200, { body: '{"result":"success"}' }), 'success').kind).toBe('retryable');
  });

  it('retries a 2xx whose body does not match, or is missing', () => {
    expect(classifyOutcome(answer(200, { body: 'ok' }), 'success')).toEqual({
      kind: 'retryable',
      why: 'HTTP 200 without the expected success body',
    });
    expect(classifyOutcome(answer(204), 'success')).toEqual({ kind: 'retryable', why: 'HTTP 204 without the expected success body' });
  });

  it('does not let a matching body rescue a non-2xx status', () => {
    expect(classifyOutcome(answer(404, { body: 'success' }), 'success')).toEqual({ kind: 'terminal', why: 'HTTP 404' });
    expect(classifyOutcome(answer(503, { body: 'success' }), 'success')).toEqual({ kind: 'retryable', why: 'HTTP 503' });
  });

  it('accepts any 2xx body when the success body is empty', () => {
    expect(classifyOutcome(answer(200, { body: 'anything' }), '')).toEqual({ kind: 'success' });
    expect(classifyOutcome(answer(200, { body: 'anything' }))).toEqual({ kind: 'success' });
  });
});
