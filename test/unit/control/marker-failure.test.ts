import { describe, expect, it } from 'vitest';
import { RelayError } from '../../../src/errors.js';
import { decideMarkerFailure, type FailedMarker } from '../../../src/control/marker-failure.js';
import { markerProperties } from '../../../src/control/publish-markers.js';

const failed = (overrides: Partial<FailedMarker>): FailedMarker => ({
  what: 'cancel marker of cb-1',
  queue: 'p.control',
  error: undefined,
  lostAfterSend: false,
  timeLeftMs: 1_000,
  timeoutMs: 10_000,
  ...overrides,
});
const code = (failure: Partial<FailedMarker>): string | undefined => {
  const decision = decideMarkerFailure(failed(failure));
  return decision.action === 'reject' ? (decision.error as RelayError).code : undefined;
};

describe('decideMarkerFailure', () => {
  it('publishes again on the next channel when the channel closed before the confirm and time is left', () => {
    expect(decideMarkerFailure(failed({ error: new RelayError('CR_ERR_CLOSED', 'closed') }))).toEqual({ action: 'republish' });
  });

  it('a returned marker means the stream does not exist: rejected at once, naming the stream', () => {
    const decision = decideMarkerFailure(failed({ error: new RelayError('CR_ERR_PUBLISH_RETURNED', 'returned'), lostAfterSend: true }));
    expect(decision).toMatchObject({ action: 'reject', error: { code: 'CR_ERR_PUBLISH_RETURNED' } });
    expect((decision as { error: Error }).error.message).toContain('"p.control"');
  });

  it('a negative confirm is a refusal, not an unknown outcome', () => {
    expect(code({ error: new RelayError('CR_ERR_PUBLISH_NACKED', 'nack') })).toBe('CR_ERR_PUBLISH_NACKED');
  });

  it('no channel, or no confirm in time, with nothing lost: CR_ERR_PUBLISH_TIMEOUT', () => {
    expect(code({ error: undefined, timeLeftMs: 0 })).toBe('CR_ERR_PUBLISH_TIMEOUT');
    expect(code({ error: new RelayError('CR_ERR_PUBLISH_TIMEOUT', 'no confirm'), timeLeftMs: 0 })).toBe('CR_ERR_PUBLISH_TIMEOUT');
  });

  it('once a channel closed after the marker was sent, running out of time leaves the outcome unknown', () => {
    expect(code({ error: undefined, lostAfterSend: true, timeLeftMs: 0 })).toBe('CR_ERR_OUTCOME_UNKNOWN');
    expect(code({ error: new RelayError('CR_ERR_CLOSED', 'closed'), timeLeftMs: 0 })).toBe('CR_ERR_OUTCOME_UNKNOWN');
    expect(code({ error: new RelayError('CR_ERR_PUBLISH_TIMEOUT', 'no confirm'), lostAfterSend: true })).toBe('CR_ERR_OUTCOME_UNKNOWN');
  });

  it("passes on what is not the broker's answer as it is", () => {
    const refused = new TypeError('cannot encode');
    expect(decideMarkerFailure(failed({ error: refused }))).toEqual({ action: 'reject', error: refused });
  });
});

describe('markerProperties', () => {
  it('every marker is persistent, JSON and mandatory, with a message id made of the marker alone', () => {
    const at = '2026-01-01T00:00:00.000Z';
    expect(markerProperties({ type: 'cancel', id: 'cb-1', at })).toEqual({
      persistent: true,
      contentType: 'application/json',
      mandatory: true,
      messageId: `cancel:cb-1:${at}`,
    });
    expect(markerProperties({ type: 'pause', origin: 'https://a.example', at }).messageId).toBe(`pause:https://a.example:${at}`);
    expect(markerProperties({ type: 'degraded', target: 'a.example', from: 'n1', at }).messageId).toBe(`degraded:a.example from n1:${at}`);
    expect(markerProperties({ type: 'sync', nonce: 'n1', at }).messageId).toBe(`sync:n1:${at}`);
  });

  it('two cancels of the same moment have different ids; the same marker published again has the same one', () => {
    const at = '2026-01-01T00:00:00.000Z';
    expect(markerProperties({ type: 'cancel', id: 'a', at }).messageId).not.toBe(
      markerProperties({ type: 'cancel', id: 'b', at }).messageId,
    );
    expect(markerProperties({ type: 'cancel', id: 'a', at }).messageId).toBe(markerProperties({ type: 'cancel', id: 'a', at }).messageId);
  });
});
