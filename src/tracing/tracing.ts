import { RelayError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { CallbackMethod } from '../message/callback.js';
import type { TriedReport } from '../reports.js';
import type { TraceContext } from './trace-context.js';

/** A span under way whose context travels on: in the message's AMQP headers, or the HTTP request. */
export interface TracedSpan {
  /** The span's own context: its children's parent. */
  readonly context: TraceContext;
}

export interface PublishSpan extends TracedSpan {
  /** Ends the span once the broker confirmed the publish, or with the error that failed it. */
  end(error?: unknown): void;
}

export interface AttemptSpan extends TracedSpan {
  /** Ends the span once the attempt (or its fail-fast) is decided, before its settle. */
  end(report: TriedReport): void;
}

/** What an attempt's span says of it: the consumer's decoded delivery carries all of it. */
export interface TracedAttempt {
  id: string;
  url: URL;
  /** The number of the attempt (1-based). */
  attempt: number;
  callback: { method?: CallbackMethod | undefined };
  /** The trace context the message carries, if any: the span's parent. */
  trace?: TraceContext | undefined;
}

/** Spans for the relay's two hops, exported by the OpenTelemetry SDK. */
export interface Tracing {
  /** A producer span, child of `parent` (else of the caller's active OpenTelemetry context). */
  startPublish(id: string, origin: string, delayMs: number, parent: TraceContext | undefined): PublishSpan;
  /** A client span for one attempt, child of the context the message carries (else a new trace). */
  startAttempt(attempt: TracedAttempt): AttemptSpan;
  /** Exports the spans still buffered and stops. */
  shutdown(): Promise<void>;
}

/** Where the OTLP/HTTP exporter sends traces: the SDK's own settings, read by the SDK itself. */
const ENDPOINT_KEYS = ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT'] as const;

/**
 * Tracing, when an OTLP endpoint is set: the OpenTelemetry SDK is imported then, and only then, so a
 * relay without it pays nothing for it. Undefined (synchronously) when no endpoint is set or
 * `OTEL_SDK_DISABLED=true`; `CR_ERR_CONFIG` naming the setting when the endpoint is not a URL. The
 * promise resolves to undefined, after an error log, should the SDK fail to load.
 */
export function loadTracing(logger: Logger, env: NodeJS.ProcessEnv = process.env): Promise<Tracing | undefined> | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const key = ENDPOINT_KEYS.find((name) => (env[name] ?? '').trim() !== '');
  if (key === undefined) return undefined;
  const endpoint = (env[key] ?? '').trim();
  if (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol)) {
    throw new RelayError('CR_ERR_CONFIG', `${key}: must be an http or https URL, got ${JSON.stringify(endpoint)}`);
  }
  return import('./otel-tracing.js').then(
    ({ createOtelTracing }) => createOtelTracing(),
    (error: unknown) => {
      logger.error({ err: (error as Error).message }, 'could not load the OpenTelemetry SDK: tracing is off');
      return undefined;
    },
  );
}
