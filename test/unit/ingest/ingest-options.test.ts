import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import { isRelayError } from '../../../src/errors.js';
import { clientErrorResponse } from '../../../src/ingest/error-responses.js';
import { ingestOptions } from '../../../src/ingest/ingest-options.js';

const TOKENS = 'unit-test-token-0123456789';

function configError(env: Record<string, string>): string {
  try {
    ingestOptions(loadConfig({ INGEST_TOKENS: TOKENS, ...env }));
  } catch (error) {
    if (isRelayError(error, 'CR_ERR_CONFIG')) return error.message;
    throw error;
  }
  throw new Error('accepted');
}

describe('ingestOptions', () => {
  it('carries the limits and timeouts, defaults included', () => {
    const options = ingestOptions(loadConfig({ INGEST_TOKENS: TOKENS, INGEST_REQUEST_TIMEOUT: '5s' }));
    expect(options).toMatchObject({
      tokens: [{ name: 'default', token: TOKENS }],
      batchMax: 100,
      maxPayloadBytes: 1_048_576,
      batchBytes: 4_194_304,
      inflightBytes: 33_554_432,
      requestTimeout: 5_000,
      connectionTimeout: 60_000,
      idempotencyWindow: 86_400_000,
      idempotencyKeys: 100_000,
    });
  });

  it('refuses INGEST_INFLIGHT_BYTES below the largest request body, naming key and value', () => {
    expect(configError({ INGEST_INFLIGHT_BYTES: '1000000' })).toContain(
      'INGEST_INFLIGHT_BYTES (ingestInflightBytes): must be at least INGEST_BATCH_BYTES (4194304), the largest request body: value was "1000000"',
    );
    expect(configError({ INGEST_INFLIGHT_BYTES: '5000000', MAX_PAYLOAD_BYTES: '6000000' })).toContain(
      'at least MAX_PAYLOAD_BYTES (6000000)',
    );
    expect(configError({ INGEST_TOKENS: '' })).toContain('INGEST_TOKENS (ingestTokens)');
  });
});

describe('clientErrorResponse', () => {
  it('408 CR_ERR_REQUEST_TIMEOUT for a request not received in time, naming the setting', () => {
    expect(clientErrorResponse('ERR_HTTP_REQUEST_TIMEOUT', 30_000)).toEqual({
      status: 408,
      body: { code: 'CR_ERR_REQUEST_TIMEOUT', message: expect.stringContaining('INGEST_REQUEST_TIMEOUT'), field: 'request', retry: true },
    });
    expect(clientErrorResponse('HPE_HEADER_OVERFLOW', 1).status).toBe(431);
    expect(clientErrorResponse('HPE_INVALID_METHOD', 1)).toMatchObject({ status: 400, body: { code: 'CR_ERR_INVALID_CALLBACK' } });
  });
});
