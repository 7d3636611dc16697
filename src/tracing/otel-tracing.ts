import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, createTraceState, trace, type Context, type Span } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type BufferConfig } from '@opentelemetry/sdk-trace-base';
import { attemptResult, attemptStartAttributes, publishAttributes } from './span-attributes.js';
import { formatTraceparent, parseTraceparent, type TraceContext } from './trace-context.js';
import type { Tracing } from './tracing.js';

/** Span names: low-cardinality, the callback's id and target are attributes. */
export const SPAN_NAME = { publish: 'callback publish', attempt: 'callback attempt' } as const;

/**
 * The relay's spans through an OpenTelemetry SDK tracer provider of its own, not registered as the
 * global one, so an application's own provider is left alone. The OTLP/HTTP exporter reads its
 * standard OTEL_EXPORTER_OTLP_* settings from the environment itself; the sampler is parent-based, always on:
 * https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/
 */
export function createOtelTracing(): Tracing {
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win over the default name.
  const resource = resourceFromAttributes({ 'service.name': 'callback-relay' }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter(), batchOptions(process.env))],
  });
  const tracer = provider.getTracer('callback-relay');
  return {
    startPublish(id, origin, delayMs, parent) {
      // Without an explicit context, the publishing service's active span (its own SDK's context manager).
      const span = tracer.startSpan(
        SPAN_NAME.publish,
        { kind: SpanKind.PRODUCER, attributes: publishAttributes(id, origin, delayMs) },
        parentContext(parent, context.active()),
      );
      return {
        context: contextOf(span),
        end(error) {
          if (error !== undefined) {
            const code = (error as { code?: unknown }).code;
            span.setAttribute('error.type', typeof code === 'string' ? code : ((error as Error).name ?? '_OTHER'));
            span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
          }
          span.end();
        },
      };
    },
    startAttempt({ id, url, attempt, callback, trace: parent }) {
      const attributes = attemptStartAttributes(id, url.origin, attempt, callback.method ?? 'POST');
      const span = tracer.startSpan(SPAN_NAME.attempt, { kind: SpanKind.CLIENT, attributes }, parentContext(parent, ROOT_CONTEXT));
      return {
        context: contextOf(span),
        end(report) {
          const { attributes, error } = attemptResult(report);
          span.setAttributes(attributes);
          if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
          span.end();
        },
      };
    },
    shutdown: () => provider.shutdown(),
  };
}

/**
 * The batch processor's standard settings. The SDK 2.x tracer provider no longer reads them itself
 * (only the Node SDK package does), so they are passed on; an unset or non-numeric one keeps the default.
 */
function batchOptions(env: NodeJS.ProcessEnv): BufferConfig {
  const options: BufferConfig = {};
  const keys = {
    OTEL_BSP_SCHEDULE_DELAY: 'scheduledDelayMillis',
    OTEL_BSP_EXPORT_TIMEOUT: 'exportTimeoutMillis',
    OTEL_BSP_MAX_QUEUE_SIZE: 'maxQueueSize',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 'maxExportBatchSize',
  } as const;
  for (const [key, option] of Object.entries(keys)) {
    const value = Number(env[key]);
    if (env[key]?.trim() && Number.isFinite(value) && value >= 0) options[option] = value;
  }
  return options;
}

/** The remote parent a trace context names, or `fallback` without one. */
function parentContext(parent: TraceContext | undefined, fallback: Context): Context {
  const parsed = parent && parseTraceparent(parent.traceparent);
  if (!parent || !parsed) return fallback;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: parsed.traceId,
    spanId: parsed.spanId,
    traceFlags: parsed.flags,
    isRemote: true,
    ...(parent.tracestate === undefined ? {} : { traceState: createTraceState(parent.tracestate) }),
  });
}

/** A span's context as W3C headers; the tracestate is the parent's, which the SDK carries over. */
function contextOf(span: Span): TraceContext {
  const { traceId, spanId, traceFlags, traceState } = span.spanContext();
  const traceparent = formatTraceparent({ traceId, spanId, flags: traceFlags });
  const tracestate = traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}
