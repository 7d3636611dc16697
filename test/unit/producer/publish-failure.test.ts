import { describe, expect, it } from 'vitest';
import { decidePublishFailure, type FailedAttempt } from '../../../src/producer/publish-failure.js';

const attempt = (overrides: Partial<FailedAttempt>): FailedAttempt => ({
  timedOut: false,
  lostDuringAttempt: false,
  lostSincePublish: false,
  publishTimeoutMs: 10_000,
  ...overrides,
});

const codeOf = (overrides: Partial<FailedAttempt>): string | undefined => {
  const decision = decidePublishFailure(attempt(overrides));
  return decision.action === 'reject' ? decision.error.code : undefined;
};

describe('decidePublishFailure', () => {
  it('republishes when the channel or connection went down before the confirm', () => {
    expect(decidePublishFailure(attempt({ lostDuringAttempt: true, lostSincePublish: true }))).toEqual({ action: 'republish' });
  });

  it('reports an unknown outcome, never "closed", once PUBLISH_TIMEOUT runs out after a loss', () => {
    expect(codeOf({ timedOut: true, lostSincePublish: true })).toBe('CR_ERR_OUTCOME_UNKNOWN');
    expect(codeOf({ timedOut: true, lostDuringAttempt: true, lostSincePublish: true })).toBe('CR_ERR_OUTCOME_UNKNOWN');
    const decision = decidePublishFailure(attempt({ timedOut: true, lostSincePublish: true }));
    expect(decision.action === 'reject' && decision.error.message).toMatch(/republish with the same id/);
  });

  it('reports a plain timeout when no loss was seen', () => {
    expect(codeOf({ timedOut: true })).toBe('CR_ERR_PUBLISH_TIMEOUT');
  });

  it('reports a negative confirm when the channel stayed up', () => {
    expect(codeOf({})).toBe('CR_ERR_PUBLISH_NACKED');
    expect(codeOf({ lostSincePublish: true })).toBe('CR_ERR_PUBLISH_NACKED');
  });

  it('keeps what the attempt ended with as the cause of the error, for the log', () => {
    const cause = new Error('the channel timed out');
    for (const overrides of [{ timedOut: true }, { timedOut: true, lostSincePublish: true }, {}]) {
      const decision = decidePublishFailure(attempt({ ...overrides, cause }));
      expect(decision.action === 'reject' && decision.error.cause).toBe(cause);
    }
  });
});
