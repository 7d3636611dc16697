import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { RelayError, isRelayError } from '../errors.js';
import type { Logger } from '../logger.js';
import { metricNames, metricsText } from '../metrics/registry.js';
import type { CallbackPublisher } from '../producer/publisher.js';
import { batchIds, itemDigest, singleId } from './callback-ids.js';
import { checkPublishJob, idempotencyKey, toPublishJob, type Envelope, type PublishJob } from './envelope.js';
import { clientErrorResponse, errorResponse, schemaErrorResponse, type ErrorResponse } from './error-responses.js';
import { createIngestMetrics, type IngestMetrics } from './ingest-metrics.js';
import { createKeyRecord } from './key-record.js';
import type { IngestOptions } from './ingest-options.js';
import { ingestSchemas, openApiDocument } from './openapi.js';
import { createRequestBudget, requestCharge } from './request-budget.js';
import { createTokenCheck } from './tokens.js';

export type { IngestOptions } from './ingest-options.js';

export interface IngestDeps {
  publisher: Pick<CallbackPublisher, 'publish' | 'connected'>;
  metrics?: IngestMetrics;
  logger?: Logger;
  /** The clock a batch's delays are checked against. */
  now?: () => number;
  newId?: () => string;
}

export interface IngestServer {
  app: FastifyInstance;
  metrics: IngestMetrics;
  /** From now on /readyz answers 503, so that load balancers stop sending before the server closes. */
  drain(): void;
}

/** `/v1/callbacks:batch`: find-my-way reads `:` as a parameter; `::` is a literal colon. */
const BATCH_PATH = '/v1/callbacks::batch';

/**
 * The stateless HTTP ingest: `POST /v1/callbacks` and `/v1/callbacks:batch` answer 202 only once the
 * broker has confirmed (the publisher waits for the confirm), plus probes, metrics and the OpenAPI
 * document. Errors answer `{code, message, field?, retry}`; see error-responses.ts for the statuses.
 */
export function buildIngestServer(options: IngestOptions, deps: IngestDeps): IngestServer {
  const { publisher, logger } = deps;
  const metrics = deps.metrics ?? createIngestMetrics();
  const now = deps.now ?? Date.now;
  const newId = deps.newId ?? randomUUID;
  const schemas = ingestSchemas(options.batchMax);
  const document = openApiDocument(schemas);
  const tokenName = createTokenCheck(options.tokens);
  // The name of the token each request was authenticated with: the scope of its Idempotency-Key.
  const scopes = new WeakMap<object, string>();
  const keys = createKeyRecord({ windowMs: options.idempotencyWindow, maxKeys: options.idempotencyKeys, now });
  const budget = createRequestBudget(options.inflightBytes);
  // Sockets whose request is read and whose answer waits for the broker: the idle timeout spares them.
  const awaitingBroker = new WeakSet<Socket>();
  let draining = false;

  const app = Fastify({
    logger: false,
    bodyLimit: options.maxPayloadBytes,
    // Longer than the idle timeout of common load balancers (60 s), so that the balancer, not this
    // server, closes idle keep-alive connections: else a request can race the server's close.
    keepAliveTimeout: 65_000,
    // fastify 5 turns Node's request timeout off: a client could trickle a body forever. Node checks it
    // every connectionsCheckingInterval (30 s by default), so it is checked as often as it is precise.
    requestTimeout: options.requestTimeout,
    connectionTimeout: options.connectionTimeout,
    http: {
      requestTimeout: options.requestTimeout,
      headersTimeout: options.requestTimeout,
      connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(options.requestTimeout / 4))),
    },
    clientErrorHandler: (error: NodeJS.ErrnoException, socket: Socket) => {
      if (error.code === 'ECONNRESET' || socket.destroyed) return;
      const { status, body } = clientErrorResponse(error.code, options.requestTimeout);
      const text = JSON.stringify(body);
      metrics.cut(status);
      if (socket.writable)
        socket.write(
          `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
        );
      socket.destroy(error);
    },
    // Reject rather than repair: unknown fields are an error (the wire contract), and no type is coerced.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false } },
  });
  // Only JSON is accepted; fastify would otherwise parse text/plain too.
  app.removeContentTypeParser('text/plain');
  // Node closes a socket idle for INGEST_CONNECTION_TIMEOUT unless a 'timeout' listener takes over.
  app.server.on('timeout', (socket: Socket) => {
    if (!awaitingBroker.has(socket)) socket.destroy();
  });

  const logged = (response: ErrorResponse, error: unknown): ErrorResponse => {
    if (response.status === 500)
      logger?.error(
        { err: (error as Error).message, code: (error as Partial<RelayError>).code, id: response.body.id },
        'ingest request failed',
      );
    return response;
  };
  const send = (reply: FastifyReply, { status, body }: ErrorResponse): FastifyReply => {
    if (status === 429 || status === 503) void reply.header('retry-after', '1');
    return reply.code(status).send(body);
  };
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error.validation?.[0]) return send(reply, schemaErrorResponse(error.validation[0]));
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      const setting = request.routeOptions.url === BATCH_PATH ? 'INGEST_BATCH_BYTES' : 'MAX_PAYLOAD_BYTES';
      const limit = request.routeOptions.bodyLimit ?? options.maxPayloadBytes;
      return send(reply, {
        status: 413,
        body: {
          code: 'CR_ERR_INVALID_CALLBACK',
          message: `request: the request body is over ${limit} bytes (${setting})`,
          field: 'request',
          retry: false,
        },
      });
    }
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return send(reply, {
        status: 415,
        body: { code: 'CR_ERR_INVALID_CALLBACK', message: 'content-type: must be application/json', field: 'content-type', retry: false },
      });
    }
    if (
      error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ||
      error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' ||
      (error.statusCode === 400 && error instanceof SyntaxError)
    ) {
      return send(reply, {
        status: 400,
        body: { code: 'CR_ERR_INVALID_CALLBACK', message: 'request: the request body is not valid JSON', field: 'request', retry: false },
      });
    }
    return send(reply, logged(errorResponse(error), error));
  });

  // Hooks in callback style: an async hook costs a promise per request on the hot path.
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url?.replace('::', ':') ?? 'unmatched';
    metrics.answered(route, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  const authenticate = (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const name = tokenName(request.headers.authorization);
    if (name !== undefined) {
      scopes.set(request.raw, name);
      return done();
    }
    void reply.header('www-authenticate', 'Bearer');
    // Answering ends the request: the handler does not run.
    void send(reply, errorResponse(new RelayError('CR_ERR_UNAUTHORIZED', 'authorization: a valid "Bearer <token>" is required')));
  };

  // Before the body is read: a request takes its bytes from the replica's budget, or is refused unread.
  const admit = (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const charge = requestCharge(request.headers['content-length'], request.routeOptions.bodyLimit ?? options.maxPayloadBytes);
    if (!budget.take(charge)) {
      const message = `this replica already holds ${budget.inUse()} of INGEST_INFLIGHT_BYTES (${options.inflightBytes}) bytes of requests; this one (${charge} bytes) was not read, nothing was stored: send it again`;
      return void send(reply, { status: 503, body: { code: 'CR_ERR_INGEST_BUSY', message, retry: true } });
    }
    metrics.inflightBytes(budget.inUse());
    // 'close' comes once, whether the answer was sent or the connection was cut.
    reply.raw.once('close', () => {
      budget.give(charge);
      metrics.inflightBytes(budget.inUse());
    });
    done();
  };
  const awaitBroker = (request: FastifyRequest, _reply: FastifyReply, done: () => void): void => {
    awaitingBroker.add(request.raw.socket);
    done();
  };
  const answering = (
    request: FastifyRequest,
    _reply: FastifyReply,
    payload: unknown,
    done: (error: null, payload: unknown) => void,
  ): void => {
    awaitingBroker.delete(request.raw.socket);
    done(null, payload);
  };
  const hooks = { onRequest: [authenticate, admit], preHandler: awaitBroker, onSend: answering };

  app.get('/healthz', async () => 'ok\n');
  app.get('/readyz', async (_request, reply) => {
    const ready = !draining && publisher.connected();
    return reply.code(ready ? 200 : 503).send(ready ? 'ready\n' : 'not ready\n');
  });
  if (options.separateMetrics !== true)
    app.get('/metrics', async (request, reply) =>
      reply.type(metrics.registry.contentType).send(await metricsText(metrics.registry, metricNames(request.url))),
    );
  app.get('/openapi.json', async () => document);

  const failures = { 400: schemas.error, 401: schemas.error, 413: schemas.error, 415: schemas.error };
  const scopeOf = (request: FastifyRequest): string => scopes.get(request.raw) ?? '';
  app.post('/v1/callbacks', {
    ...hooks,
    schema: {
      body: schemas.envelope,
      response: { 202: schemas.accepted, ...failures, 422: schemas.error, 429: schemas.error, 500: schemas.error, 503: schemas.error },
    },
    handler: async (request, reply) => {
      const envelope = request.body as Envelope;
      const assigned = singleId(envelope, idempotencyKey(request.headers['idempotency-key']), scopeOf(request), newId);
      // Claimed before publishing, whatever the outcome: a key is one callback, stored or not.
      const claim = assigned.from === 'key' ? keys.claim(assigned.id, itemDigest(envelope)) : undefined;
      if (claim === 'conflict') {
        const message = `Idempotency-Key: this key came with another callback (method, url, headers or body) within INGEST_IDEMPOTENCY_WINDOW; it stands for the callback ${JSON.stringify(assigned.id)}; nothing was stored: send a new callback with a new key`;
        return send(reply, errorResponse(new RelayError('CR_ERR_IDEMPOTENCY_KEY_REUSED', message, { field: 'Idempotency-Key' }), assigned));
      }
      // publish() checks the callback itself, with the same errors: no need to check it twice.
      const job = toPublishJob(envelope, assigned.id);
      try {
        await publisher.publish(job.callback, job.options);
      } catch (error) {
        // Refused as invalid: the corrected callback may come with the same key.
        if (claim === 'new' && isRelayError(error, 'CR_ERR_INVALID_CALLBACK')) keys.forget(assigned.id);
        return send(reply, logged(errorResponse(error, assigned), error));
      }
      metrics.accepted(1);
      return reply.code(202).send({ id: assigned.id });
    },
  });

  app.post(BATCH_PATH, {
    ...hooks,
    bodyLimit: options.batchBytes,
    schema: {
      body: schemas.batchRequest,
      response: { 202: schemas.batchResult, ...failures, 429: schemas.batchResult, 503: schemas.batchUnavailable },
    },
    handler: async (request, reply) => {
      const key = idempotencyKey(request.headers['idempotency-key']);
      const envelopes = (request.body as { callbacks: Envelope[] }).callbacks;
      const ids = batchIds(envelopes, key, scopeOf(request), newId);
      const nowMs = now();
      // All or nothing: every item is checked before the first is published.
      const jobs: PublishJob[] = envelopes.map((envelope, index) => {
        try {
          return checkPublishJob(toPublishJob(envelope, ids[index]!.id), nowMs, options.maxPayloadBytes);
        } catch (error) {
          if (!isRelayError(error, 'CR_ERR_INVALID_CALLBACK')) throw error;
          throw new RelayError('CR_ERR_INVALID_CALLBACK', `callbacks[${index}].${error.message}`, {
            field: `callbacks[${index}].${error.field}`,
            cause: error,
          });
        }
      });
      const outcomes = await Promise.allSettled(jobs.map((job) => publisher.publish(job.callback, job.options)));
      let status = 202;
      const results = outcomes.map((outcome, index) => {
        const id = jobs[index]!.callback.id!;
        if (outcome.status === 'fulfilled') return { index, id, status: 202 };
        const { status: itemStatus, body } = logged(errorResponse(outcome.reason, ids[index]), outcome.reason);
        status = Math.max(status === 202 ? 0 : status, itemStatus);
        return { index, id, status: itemStatus, code: body.code, message: body.message, retry: body.retry };
      });
      metrics.accepted(results.filter((result) => result.status === 202).length);
      if (status === 429 || status === 503) void reply.header('retry-after', '1');
      return reply.code(status).send({ results });
    },
  });

  return {
    app,
    metrics,
    drain: () => {
      draining = true;
    },
  };
}
