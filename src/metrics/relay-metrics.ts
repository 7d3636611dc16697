import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { createRegistry } from './registry.js';
import type { AttemptReport, PipelineObserver, TriedReport } from '../consumer/observer.js';

/** Degraded targets named in `callback_relay_degraded_target`, at most: label cardinality stays bounded. */
export const MAX_TARGET_LABELS = 20;

export interface HealthSource {
  degradedCount(): number;
  /** The most recently seen degraded targets, up to `limit`. */
  degradedTargets(limit: number): string[];
}

/**
 * Prometheus metrics of a worker, fed by the pipeline observer. Everything is labelled by small
 * fixed sets (lane, result, reason), never by callback id or URL; targets appear only while
 * degraded and at most MAX_TARGET_LABELS at a time.
 */
export function createRelayMetrics(health: () => HealthSource | undefined): { registry: Registry; observer: PipelineObserver; consumerCancelled: () => void } {
  const registry = createRegistry();
  const attempts = new Counter({ name: 'callback_relay_attempts_total', help: 'Attempts by lane (work lane index, or slow) and result: success, retryable or terminal.', labelNames: ['lane', 'result'], registers: [registry] });
  const outcomes = new Counter({
    name: 'callback_relay_callbacks_total',
    help: 'Callbacks settled: delivered, retried (retry scheduled) or dead (by reason: exhausted, rejected, invalid, canceled…).',
    labelNames: ['outcome', 'reason'],
    registers: [registry],
  });
  const cancelled = new Counter({ name: 'callback_relay_consumer_cancelled_total', help: 'Consumers the broker cancelled (the worker reconnects to consume again).', registers: [registry] });
  const duration = new Histogram({
    name: 'callback_relay_attempt_duration_seconds',
    help: 'Duration of HTTP attempts.',
    labelNames: ['lane'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const confirm = new Histogram({
    name: 'callback_relay_publish_confirm_seconds',
    help: 'Time from publishing a retry or dead-letter copy to the broker confirm.',
    labelNames: ['kind'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
    registers: [registry],
  });
  const fallbacks = new Counter({
    name: 'callback_relay_settle_fallbacks_total',
    help: 'Retry or dead-letter copies that could not be stored (returned, nacked, timeout, too-large, refused): the original was rejected for the broker to dead-letter to P.dead.',
    labelNames: ['kind', 'cause'],
    registers: [registry],
  });
  // Counted in a plain number and read when scraped: it changes twice per message.
  let inFlightNow = 0;
  new Gauge({
    name: 'callback_relay_in_flight',
    help: 'Messages being processed by this worker.',
    registers: [registry],
    collect() {
      this.set(inFlightNow);
    },
  });
  const moves = new Counter({
    name: 'callback_relay_moves_total',
    help: 'Callbacks moved unattempted, their attempt unchanged: deferred (circuit open) or overflow (a busy target\'s excess, to P.slow).',
    labelNames: ['kind'],
    registers: [registry],
  });
  const transitions = new Counter({ name: 'callback_relay_target_transitions_total', help: 'Target health transitions.', labelNames: ['to'], registers: [registry] });
  new Gauge({
    name: 'callback_relay_degraded_targets',
    help: 'Targets currently degraded in this worker.',
    registers: [registry],
    collect() {
      this.set(health()?.degradedCount() ?? 0);
    },
  });
  new Gauge({
    name: 'callback_relay_degraded_target',
    help: `1 per degraded target (the ${MAX_TARGET_LABELS} most recently seen).`,
    labelNames: ['target'],
    registers: [registry],
    collect() {
      this.reset();
      for (const target of health()?.degradedTargets(MAX_TARGET_LABELS) ?? []) this.set({ target }, 1);
    },
  });

  const observer: PipelineObserver = {
    reported(report: AttemptReport) {
      // A hold settles nothing: the callback is counted when it is attempted after the resume.
      if (report.kind === 'held') return;
      // A canceled callback or an invalid message is parked without an attempt: only its outcome counts.
      if (report.kind === 'canceled' || report.kind === 'invalid') return void outcomes.inc({ outcome: 'dead', reason: report.kind });
      attempts.inc({ lane: report.lane, result: attemptResult(report) });
      duration.observe({ lane: report.lane }, report.outcome.durationMs / 1000);
      const { decision } = report;
      if (decision.kind === 'ack') outcomes.inc({ outcome: 'delivered', reason: '' });
      else if (decision.kind === 'retry') outcomes.inc({ outcome: 'retried', reason: '' });
      else outcomes.inc({ outcome: 'dead', reason: decision.reason });
    },
    confirmed: (kind, seconds) => confirm.observe({ kind }, seconds),
    settleFallback: (kind, cause) => fallbacks.inc({ kind, cause }),
    transition: (transition) => transitions.inc({ to: transition.to }),
    inFlight: (delta) => {
      inFlightNow += delta;
    },
    moved: (kind) => moves.inc({ kind }),
  };
  return { registry, observer, consumerCancelled: () => cancelled.inc() };
}

/**
 * An attempt's result label, read off its decision (the outcome was classified once, by the policy):
 * acked → success; retried or out of attempts → retryable; refused for good → terminal. A 2xx
 * without the success body its policy asked for is retryable, as the policy decided.
 */
function attemptResult({ decision }: TriedReport): 'success' | 'retryable' | 'terminal' {
  if (decision.kind === 'ack') return 'success';
  return decision.kind === 'dead' && decision.reason !== 'exhausted' ? 'terminal' : 'retryable';
}
