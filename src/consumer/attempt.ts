import type { AttemptKind, Effects, Scheduler } from '../isolation/scheduler.js';
import type { DeliveryOutcome } from '../policy/classify-outcome.js';
import type { PolicyDefaults } from '../policy/message-policy.js';
import { timeoutOf } from '../policy/schedule-end.js';
import type { TraceContext } from '../tracing/trace-context.js';
import type { AttemptSpan, Tracing } from '../tracing/tracing.js';
import type { Job } from './admit.js';
import { AttemptDeadline } from './attempt-deadline.js';
import type { Delivery } from './decode.js';
import type { DeadlineSignal } from './deliver.js';

/** Step 3's value: what an attempt gave. */
export interface Attempted {
  job: Job;
  outcome: DeliveryOutcome;
  startedAt: number;
  span: AttemptSpan | undefined;
}

/** One HTTP request of a callback (deliver.ts with the worker's options); never rejects. */
export type Send = (delivery: Delivery, deadline: DeadlineSignal, trace: TraceContext | undefined) => Promise<DeliveryOutcome>;

export interface AttemptDeps {
  scheduler: Pick<Scheduler<Job>, 'slowThresholdMs' | 'overdue' | 'complete'>;
  send: Send;
  /** A span per attempt, when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  tracing?: Tracing | undefined;
  clock: () => number;
  /** The worker's attempt timeout, for callbacks without a named policy. */
  rules: PolicyDefaults;
  /** Carries out what the scheduler's answer changed: a health transition, jobs an opened circuit hands back. */
  apply: (effects: Effects<Job>) => void;
  /** The attempt's slot is free: start what waits for one. */
  freed: () => void;
}

/**
 * Step 3: one HTTP attempt. Its slot is freed the moment the exchange ends, before the decision is
 * settled; the scheduler hears how it went (and, once it runs past the slow threshold, that it is
 * overdue). Rejects only when something other than the request failed.
 */
export async function attempt(job: Job, kind: AttemptKind, deps: AttemptDeps): Promise<Attempted> {
  const { target, delivery } = job;
  const { scheduler, clock } = deps;
  const startedAt = clock();
  let outcome: DeliveryOutcome = { error: 'not attempted', durationMs: 0 };
  let overdue = false;
  try {
    // The receiver gets the attempt span's context, or without tracing the published one (deliver's default).
    const span = deps.tracing?.startAttempt(delivery);
    const slowAfterMs = scheduler.slowThresholdMs;
    const deadline = new AttemptDeadline(
      timeoutOf(delivery, deps.rules),
      slowAfterMs === undefined
        ? undefined
        : { afterMs: slowAfterMs, onSlow: () => deps.apply(scheduler.overdue(target, clock(), kind, delivery.attempt)) },
    );
    // send never throws; the catch is a guarantee, not a path.
    outcome = await deps
      .send(delivery, deadline, span?.context)
      .catch((error: unknown) => ({ error: String(error), durationMs: clock() - startedAt }));
    overdue = deadline.finish();
    return { job, outcome, startedAt, span };
  } finally {
    // The slot is freed whatever happened; a throw above sends the message back to its queue (pipeline).
    deps.apply(scheduler.complete(target, kind, outcome, clock(), { wasOverdue: overdue, attempt: delivery.attempt }));
    deps.freed();
  }
}
