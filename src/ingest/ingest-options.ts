import type { RelayConfig } from '../config/load-config.js';
import { RelayError } from '../errors.js';
import { parseIngestTokens, type IngestToken } from './tokens.js';

export interface IngestOptions {
  /** INGEST_TOKENS, parsed; at least one. */
  tokens: readonly IngestToken[];
  /** INGEST_BATCH_MAX. */
  batchMax: number;
  /** MAX_PAYLOAD_BYTES: the request body limit of one callback. */
  maxPayloadBytes: number;
  /** INGEST_BATCH_BYTES: the request body limit of a batch. */
  batchBytes: number;
  /** INGEST_INFLIGHT_BYTES: request body bytes held at once. */
  inflightBytes: number;
  /** INGEST_REQUEST_TIMEOUT, ms. */
  requestTimeout: number;
  /** INGEST_CONNECTION_TIMEOUT, ms. */
  connectionTimeout: number;
  /** INGEST_IDEMPOTENCY_WINDOW, ms: how long a replica remembers an Idempotency-Key's callback. */
  idempotencyWindow: number;
  /** INGEST_IDEMPOTENCY_KEYS: how many keys a replica remembers at most. */
  idempotencyKeys: number;
  /** INGEST_METRICS_PORT > 0: `/metrics` is served on a listener of its own, not on the ingest's. */
  separateMetrics?: boolean;
}

/**
 * The ingest's settings out of the configuration, with the checks only the ingest needs (a worker
 * sharing the environment must not fail on them). Throws `CR_ERR_CONFIG` naming the key and value.
 */
export function ingestOptions(config: RelayConfig): IngestOptions {
  const problems: string[] = [];
  const tokens = parseIngestTokens(config.ingestTokens);
  if (tokens.length === 0) problems.push('  INGEST_TOKENS (ingestTokens): the ingest needs at least one bearer token: value was ""');
  // Else a request the route limits allow could never be admitted.
  const largest = Math.max(config.maxPayloadBytes, config.ingestBatchBytes);
  if (config.ingestInflightBytes < largest) {
    const by =
      largest === config.ingestBatchBytes
        ? `INGEST_BATCH_BYTES (${config.ingestBatchBytes})`
        : `MAX_PAYLOAD_BYTES (${config.maxPayloadBytes})`;
    problems.push(
      `  INGEST_INFLIGHT_BYTES (ingestInflightBytes): must be at least ${by}, the largest request body: value was "${config.ingestInflightBytes}"`,
    );
  }
  if (problems.length > 0) throw new RelayError('CR_ERR_CONFIG', `invalid configuration:\n${problems.join('\n')}`);
  return {
    tokens,
    batchMax: config.ingestBatchMax,
    maxPayloadBytes: config.maxPayloadBytes,
    batchBytes: config.ingestBatchBytes,
    inflightBytes: config.ingestInflightBytes,
    requestTimeout: config.ingestRequestTimeout,
    connectionTimeout: config.ingestConnectionTimeout,
    idempotencyWindow: config.ingestIdempotencyWindow,
    idempotencyKeys: config.ingestIdempotencyKeys,
    separateMetrics: config.ingestMetricsPort > 0,
  };
}
