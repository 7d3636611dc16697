import { describe, expect, it } from 'vitest';
import { RelayError } from '../../../src/errors.js';
import { errorResponse } from '../../../src/ingest/error-responses.js';

describe('errorResponse', () => {
  it('answers anything that is not a RelayError with a 500 CR_ERR_INTERNAL that tells nothing of the cause', () => {
    expect(errorResponse(new Error('secret detail'))).toEqual({
      status: 500,
      body: { code: 'CR_ERR_INTERNAL', message: 'internal error', retry: true },
    });
  });

  it('answers a RelayError without a status of its own with a 500 that keeps its code', () => {
    expect(errorResponse(new RelayError('CR_ERR_TOPOLOGY', 'refused'))).toMatchObject({
      status: 500,
      body: { code: 'CR_ERR_TOPOLOGY', retry: true },
    });
  });
});
