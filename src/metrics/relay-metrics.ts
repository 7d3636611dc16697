import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { createRegistry } from './registry.js';
import type { AttemptReport, PipelineObserver, TriedReport } from '../reports.js';

/** Degraded targets named in `callback_relay_degraded_target`, at most: label cardinality stays bounded. */
export const MAX_TARGET_LABELS = 20;

export interface HealthSource {
  degradedCount(): number;
  /** The most recently seen degraded targets, up to `limit`. */
  degradedTargets(limit: number): string[];
  /** Limited or backed-off targets now: their fleet-wide rate (undefined: no rate), its share left by back-offs, paused or not. */
  limitsNow?(nowMs: number): Iterable<{ target: string; rate: number | undefined; factor: number; paused: boolean }>;
  /** What limited targets' callbacks waited here for their limit (ms), and their starts per target, since the last call. */
  takeLimitStats?(): { waitsMs: number[]; starts: Map<string, number> };
}

/**
 * Prometheus metrics of a worker, fed by the pipeline observer. Everything is labelled by small
 * fixed sets (lane, result, reason), never by callback id or URL; targets appear only while
 * degraded and at most MAX_TARGET_LABELS at a time.
 */
/** What the worker's ordered shards report (consumer/ordered-keys.ts). */
export interface OrderedSource {
  /** Ordered shards this worker is the active consumer of now. */
  owned(): number;
  /** Keys held by a head waiting for its retry, over those shards. */
  held(): number;
}

export function createRelayMetrics(
  health: () => HealthSource | undefined,
  ordered: () => OrderedSource | undefined = () => undefined,
): {
  registry: Registry;
  observer: PipelineObserver;
  consumerCancelled: () => void;
  laneChannelClosed: () => void;
} {
  const registry = createRegistry();
  const attempts = new Counter({
    name: 'callback_relay_attempts_total',
    help: 'Attempts by lane (work lane index, or slow) and result: success, retryable or terminal.',
    labelNames: ['lane', 'result'],
    registers: [registry],
  });
  const outcomes = new Counter({
    name: 'callback_relay_callbacks_total',
    help: 'Callbacks settled: delivered, retried (retry scheduled) or dead (by reason: exhausted, rejected, invalid, canceled…).',
    labelNames: ['outcome', 'reason'],
    registers: [registry],
  });
  const cancelled = new Counter({
    name: 'callback_relay_consumer_cancelled_total',
    help: 'Consumers the broker cancelled (the worker reconnects to consume again).',
    registers: [registry],
  });
  const laneClosed = new Counter({
    name: 'callback_relay_lane_channels_closed_total',
    help: "Lane channels closed other than by the worker's stop (a channel error such as a consumer timeout, or the connection lost); their unacked messages went back to their queues.",
    registers: [registry],
  });
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
    help: "Callbacks moved unattempted, their attempt unchanged: deferred (circuit open), overflow (a busy target's excess, to P.slow) or limited (its limit holds it back for long: stored in the delay path).",
    labelNames: ['kind'],
    registers: [registry],
  });
  const transitions = new Counter({
    name: 'callback_relay_target_transitions_total',
    help: 'Target health transitions.',
    labelNames: ['to'],
    registers: [registry],
  });
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

  limitMetrics(registry, health);
  new Gauge({
    name: 'callback_relay_ordered_shards_owned',
    help: 'Ordered shards (P.ordered.<n>) this worker is the single active consumer of.',
    registers: [registry],
    collect() {
      this.set(ordered()?.owned() ?? 0);
    },
  });
  new Gauge({
    name: 'callback_relay_ordered_held_keys',
    help: "Order keys held in this worker's shards: a head waits for its retry, its key's later callbacks in the shard's log.",
    registers: [registry],
    collect() {
      this.set(ordered()?.held() ?? 0);
    },
  });

  const observer: PipelineObserver = {
    reported(report: AttemptReport) {
      // A hold settles nothing: the callback is counted when it is attempted after the resume.
      if (report.kind === 'held') return;
      // A canceled callback or an invalid message is parked without an attempt: only its outcome counts.
      if (report.kind === 'canceled' || report.kind === 'invalid') return void outcomes.inc({ outcome: 'dead', reason: report.kind });
      // Expired: its circuit open to the end of its schedule, dead-lettered without another attempt.
      if (report.kind === 'expired') return void outcomes.inc({ outcome: 'dead', reason: 'exhausted' });
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
  return { registry, observer, consumerCancelled: () => cancelled.inc(), laneChannelClosed: () => laneClosed.inc() };
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

/**
 * Limits (docs/limits.md): per limited or backed-off target, at most MAX_TARGET_LABELS of them, its
 * rate now and the share a back-off left of it, whether it is paused, and its requests started (a
 * rate() of it is the rate achieved by this worker); and how long callbacks waited for a limit.
 */
function limitMetrics(registry: Registry, source: () => HealthSource | undefined): void {
  const limited = (): Array<{ target: string; rate: number | undefined; factor: number; paused: boolean }> =>
    [...(source()?.limitsNow?.(Date.now()) ?? [])].slice(0, MAX_TARGET_LABELS);
  const wait = new Histogram({
    name: 'callback_relay_limit_wait_seconds',
    help: "How long a limited or backed-off target's callback waited in this worker for its limit before its attempt started.",
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  /** Targets named by the counter so far: at most MAX_TARGET_LABELS. */
  const named = new Set<string>();
  const label = (target: string): string => {
    if (named.size < MAX_TARGET_LABELS) named.add(target);
    return named.has(target) ? target : 'other';
  };
  new Counter({
    name: 'callback_relay_limited_attempts_total',
    help: `Attempts started to limited or backed-off targets, by target (the first ${MAX_TARGET_LABELS} seen; others as "other").`,
    labelNames: ['target'],
    registers: [registry],
    collect() {
      const stats = source()?.takeLimitStats?.();
      if (!stats) return;
      for (const ms of stats.waitsMs) wait.observe(ms / 1000);
      for (const [target, count] of stats.starts) this.inc({ target: label(target) }, count);
    },
  });
  new Gauge({
    name: 'callback_relay_target_limit_rate',
    help: `Fleet-wide requests per second a limited target may get now: its limit times the share a back-off left (the first ${MAX_TARGET_LABELS}).`,
    labelNames: ['target'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { target, rate } of limited()) if (rate !== undefined) this.set({ target }, rate);
    },
  });
  new Gauge({
    name: 'callback_relay_target_limit_factor',
    help: "The share of its rate a limited target's back-off leaves (1: none), and 1 per backed-off target without a rate.",
    labelNames: ['target', 'paused'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { target, factor, paused } of limited()) this.set({ target, paused: String(paused) }, factor);
    },
  });
}
