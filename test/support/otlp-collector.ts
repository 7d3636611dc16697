import { createServer } from 'node:http';
import { listenOnLoopback } from './free-port.js';

/** A span as an OTLP/HTTP JSON export carries it, attributes flattened. */
export interface ExportedSpan {
  name: string;
  /** OTLP SpanKind: 3 client, 4 producer. */
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  attributes: Record<string, string | number | boolean>;
  /** OTLP StatusCode: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  serviceName: string | undefined;
}

export interface OtlpCollector {
  /** `http://127.0.0.1:PORT`, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  origin: string;
  spans: ExportedSpan[];
  /** Resolves once `predicate` holds over the spans (polled), or rejects after `timeoutMs`. */
  waitFor(predicate: (spans: ExportedSpan[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpExport {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: Array<{
      spans?: Array<{
        name: string;
        kind: number;
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        attributes?: OtlpAttribute[];
        status?: { code?: number };
      }>;
    }>;
  }>;
}

const flatten = (attributes: OtlpAttribute[] = []): Record<string, string | number | boolean> =>
  Object.fromEntries(
    attributes.map(({ key, value }) => [
      key,
      value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.doubleValue ?? value.boolValue ?? '')),
    ]),
  );

/**
 * A real `node:http` OTLP/HTTP receiver on port 0: accepts POST /v1/traces in the JSON encoding
 * (what the OTLP/HTTP trace exporter sends) and keeps every span.
 */
export async function startOtlpCollector(): Promise<OtlpCollector> {
  const spans: ExportedSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(415).end();
        return;
      }
      const exported = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport;
      for (const resourceSpans of exported.resourceSpans ?? []) {
        const serviceName = flatten(resourceSpans.resource?.attributes)['service.name'];
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({
              name: span.name,
              kind: span.kind,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId || undefined,
              attributes: flatten(span.attributes),
              statusCode: span.status?.code ?? 0,
              serviceName: typeof serviceName === 'string' ? serviceName : undefined,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  const origin = await listenOnLoopback(server);
  return {
    origin,
    spans,
    async waitFor(predicate, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(spans)) {
        if (Date.now() > deadline) throw new Error(`collector: condition not met within ${timeoutMs} ms (${spans.length} spans)`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
