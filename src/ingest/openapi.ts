import { MAX_ID_LENGTH, MAX_URL_LENGTH, METHODS } from '../message/callback.js';
import { ITEM_DIGEST_LENGTH } from './callback-ids.js';

/**
 * The ingest's HTTP contract. The route schemas fastify validates requests and serialises answers
 * with are the very objects this document embeds, and `docs/openapi.json` is this document written out
 * (`npm run docs:openapi -- --write`; a unit test compares it with what `/openapi.json` serves), so
 * neither the validation nor the file can drift from what is served.
 *
 * The schemas are the first line of checks; the library's own validation (wire contract, payload
 * size, delay range) runs after them, so both routes refuse exactly what `publish()` refuses.
 */
export function ingestSchemas(batchMax: number) {
  const id = {
    type: 'string',
    minLength: 1,
    maxLength: MAX_ID_LENGTH,
    description:
      'Callback id, sent as `webhook-id`. Default: `<token name>:<Idempotency-Key>` (a batch item: `<token name>:<key>:<digest of the item>`), else a new UUID.',
  };
  const envelope = {
    type: 'object',
    additionalProperties: false,
    required: ['url', 'body'],
    properties: {
      id,
      url: { type: 'string', minLength: 1, maxLength: MAX_URL_LENGTH, description: 'http or https target.' },
      body: { description: 'Any JSON value (null included), sent as the request body.' },
      headers: {
        type: 'object',
        additionalProperties: { type: 'string' },
        description: "Extra request headers; `webhook-*`, `x-callback-*`, framing and hop-by-hop headers are the relay's.",
      },
      method: { type: 'string', enum: [...METHODS], description: 'Default POST.' },
      delay: {
        oneOf: [{ type: 'integer', minimum: 0 }, { type: 'string' }],
        description: 'Delay before the first attempt: ms, or a duration such as `30s`, `5m`, `6h`.',
      },
      deliverAt: {
        type: 'string',
        format: 'date-time',
        description: "Instead of `delay`: the first attempt's time (RFC 3339); a past time means now.",
      },
      orderKey: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_ID_LENGTH,
        description:
          'Callbacks with the same key are delivered one at a time, in the order the broker accepted them. Printable ASCII without surrounding spaces. Not with a `delay` or a future `deliverAt` (400, `field`: the one given).',
      },
    },
  };
  const retry = { type: 'boolean', description: "true: the request may be sent again; `message` says how to keep the callback's id." };
  const error = {
    type: 'object',
    required: ['code', 'message', 'retry'],
    properties: {
      code: { type: 'string', description: 'Stable error code (`CR_ERR_*`).' },
      message: { type: 'string' },
      field: {
        type: 'string',
        description:
          'The field at fault, e.g. `url`, `headers.x-a`, `callbacks[3].delay`, `Idempotency-Key`, or `request` (the request body as a whole).',
      },
      id: {
        type: 'string',
        description:
          'The id the callback was given, on every answer about publishing it (429, 500, 503): send it again with this id. On a 422, the id the Idempotency-Key stands for.',
      },
      retry,
    },
  };
  const accepted = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } };
  const batchRequest = {
    type: 'object',
    additionalProperties: false,
    required: ['callbacks'],
    properties: {
      callbacks: {
        type: 'array',
        minItems: 1,
        maxItems: batchMax,
        items: envelope,
        description: `At most ${batchMax} (INGEST_BATCH_MAX).`,
      },
    },
  };
  const batchResult = {
    type: 'object',
    required: ['results'],
    properties: {
      results: {
        type: 'array',
        description: 'One per callback, in request order.',
        items: {
          type: 'object',
          required: ['index', 'id', 'status'],
          properties: {
            index: { type: 'integer' },
            id: { type: 'string' },
            status: {
              type: 'integer',
              description: '202: confirmed by the broker; else the status a single POST would have had (429, 503, …).',
            },
            code: { type: 'string' },
            message: { type: 'string' },
            retry,
          },
        },
      },
    },
  };
  // A batch refused unread (CR_ERR_INGEST_BUSY) has no results.
  const batchUnavailable = { anyOf: [batchResult, error] };
  return { envelope, error, accepted, batchRequest, batchResult, batchUnavailable };
}

export type IngestSchemas = ReturnType<typeof ingestSchemas>;

const json = (schema: object, example?: unknown) => ({
  content: { 'application/json': example === undefined ? { schema } : { schema, example } },
});

/** The OpenAPI 3 document of the ingest, built around `schemas`. */
export function openApiDocument(schemas: IngestSchemas) {
  const { envelope, error, accepted, batchRequest, batchResult } = schemas;
  const security = [{ bearer: [] }];
  const idempotencyKey = {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    schema: { type: 'string', minLength: 1, maxLength: MAX_ID_LENGTH },
    description:
      'When the body has no id, the callback id is `<token name>:<key>` (the name of the INGEST_TOKENS entry the request authenticated with), so a retried POST keeps its id and two clients with the same key do not share one. Neither the relay nor the broker deduplicates: receivers deduplicate on `webhook-id`.',
  };
  const reused = {
    description:
      'The Idempotency-Key came to this replica with another callback (method, url, headers or body; not the delay) within INGEST_IDEMPOTENCY_WINDOW (`CR_ERR_IDEMPOTENCY_KEY_REUSED`, `field`: `Idempotency-Key`, `id`: the callback the key stands for). Nothing was stored. Checked per replica, in memory: see docs/ingest.md.',
    ...json(error),
  };
  const failures = {
    '400': { description: 'Invalid request; `field` names what is wrong. Nothing was stored.', ...json(error) },
    '401': { description: 'Missing or unknown bearer token.', ...json(error) },
    '408': {
      description:
        'The request did not arrive in full within INGEST_REQUEST_TIMEOUT (`CR_ERR_REQUEST_TIMEOUT`); the connection is closed. Nothing was stored.',
      ...json(error),
    },
    '413': { description: 'Request body over MAX_PAYLOAD_BYTES (a batch: over INGEST_BATCH_BYTES).', ...json(error) },
    '415': { description: 'Content-Type is not application/json.', ...json(error) },
    '429': {
      description:
        'PUBLISH_BUFFER_LIMIT publishes are waiting for the broker; nothing was stored. Send it again later with the `id` of the answer.',
      ...json(error),
    },
    '500': {
      description: 'Unexpected failure; with an `id`, the callback may or may not be stored: send it again with that id.',
      ...json(error),
    },
    '503': {
      description:
        'The broker is unreachable or did not confirm in time (the callback may or may not be stored: send it again with the `id` of the answer), refused it or the replica is shutting down (not stored), or the replica holds INGEST_INFLIGHT_BYTES already (`CR_ERR_INGEST_BUSY`, not read).',
      ...json(error),
    },
  };
  const example = { url: 'https://example.com/hooks/orders', body: { orderId: 42, status: 'paid' }, delay: '30s' };
  return {
    openapi: '3.0.3',
    info: {
      title: 'callback-relay HTTP ingest',
      version: '1',
      description:
        'Accepts callbacks over HTTP and answers only once RabbitMQ has confirmed them (publisher confirms). Probes and metrics: /healthz, /readyz, /metrics.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'One of INGEST_TOKENS.' } },
      schemas: { Envelope: envelope, Error: error, Accepted: accepted, BatchRequest: batchRequest, BatchResult: batchResult },
    },
    paths: {
      '/v1/callbacks': {
        post: {
          summary: 'Accept one callback',
          security,
          parameters: [idempotencyKey],
          requestBody: { required: true, ...json(envelope, example) },
          responses: {
            '202': { description: 'Confirmed by the broker: the relay will deliver it.', ...json(accepted) },
            ...failures,
            '422': reused,
          },
        },
      },
      '/v1/callbacks:batch': {
        post: {
          summary: 'Accept several callbacks',
          description:
            "All items are validated first: one invalid item refuses the whole batch (400 naming `callbacks[i].field`) and nothing is stored. Then every item is published, and the answer comes once each is confirmed or failed. 202 when all were confirmed; otherwise the status of the worst failure (503 over 429), with each item's own status in `results`.",
          security,
          parameters: [
            {
              ...idempotencyKey,
              description: `Items without an id get \`<token name>:<key>:<digest>\`, the digest (${ITEM_DIGEST_LENGTH} characters) of what the receiver gets (method, url, headers, body; not the delay), so an item sent again in any batch with the same key and a token of the same name keeps its id, and another item gets another id. Two identical items without an id refuse the batch (400). The whole id is at most 255 characters.`,
            },
          ],
          requestBody: {
            required: true,
            ...json(batchRequest, { callbacks: [example, { url: example.url, body: { orderId: 43, status: 'paid' } }] }),
          },
          responses: {
            '202': { description: 'Every item confirmed by the broker.', ...json(batchResult) },
            ...failures,
            '429': { description: 'Some items were refused (buffer full); see `results`.', ...json(batchResult) },
            '503': {
              description:
                'Some items were not confirmed; see `results`, and send the failed ones again with the same Idempotency-Key (or their `id`). Or the replica is busy (`CR_ERR_INGEST_BUSY`): an error, nothing read.',
              ...json(schemas.batchUnavailable),
            },
          },
        },
      },
    },
  };
}
