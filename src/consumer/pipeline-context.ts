import type { AutoPause } from '../control/auto-pause.js';
import type { ControlView } from '../control/control-state.js';
import type { DurableEvents } from '../events/durable-events.js';
import type { Effects, Scheduler } from '../isolation/scheduler.js';
import type { TargetKey } from '../isolation/target-isolation.js';
import type { Logger } from '../logger.js';
import type { RetryPolicy } from '../policy/decide.js';
import type { Random } from '../policy/jitter.js';
import type { RetryPolicies } from '../policy/message-policy.js';
import type { ScheduleRules } from '../policy/schedule-end.js';
import type { Lane, PipelineObserver } from '../reports.js';
import type { SettleContext } from '../settle/settle.js';
import type { DelayMode } from '../topology/delay-levels.js';
import type { TopologyNames } from '../topology/topology-names.js';
import type { Tracing } from '../tracing/tracing.js';
import { OriginBuckets, type AdmitDeps, type Job, type JobDeps } from './admit.js';
import type { AttemptDeps } from './attempt.js';
import type { ConcludeDeps, SettleDeps } from './conclude.js';
import { deliver, type DeliverOptions } from './deliver.js';
import type { BrokerEffectsDeps, MessageEffects } from './effects.js';
import { LaneMoves, type MoveDeps } from './move-out.js';
import type { OrderedKeys } from './ordered-keys.js';

/** Everything the per-message path needs, built once when the worker starts. */
export interface PipelineContext {
  names: TopologyNames;
  mode: DelayMode;
  maxPayloadBytes: number;
  /** The worker's own retry policy, and the named ones a callback's `policy` field picks from. */
  retry: RetryPolicy;
  policies: RetryPolicies | undefined;
  deliver: DeliverOptions;
  /** Target isolation, or arrival order when ISOLATION=off: which waiting job gets the next slot. */
  scheduler: Scheduler<Job>;
  targetKey: TargetKey;
  clock: () => number;
  random: Random;
  logger: Logger;
  observer: PipelineObserver;
  /** Confirm timeout and topology redeclare for settle (see SettleContext). */
  settle: Pick<SettleContext, 'confirmTimeoutMs' | 'redeclare'>;
  /** A span per attempt, when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  tracing?: Tracing | undefined;
  /** EVENTS=durable: each outcome's event is stored before its message is settled. */
  durableEvents?: DurableEvents | undefined;
  /** The control stream's cancels and pauses, as this worker has read them (src/control/). */
  control?: ControlView | undefined;
  /** AUTO_PAUSE_AFTER: failure streaks per origin that pause a target fleet-wide once long enough. */
  autoPause?: AutoPause | undefined;
  /**
   * How many unsettled messages a lane's consumer window holds beyond the line where what queues
   * behind them still comes in (negative: room left). Without it, a busy target's callbacks leave
   * their lane whatever its window holds.
   */
  laneExcess?: ((lane: Lane) => number) | undefined;
  /** LIMIT_HOLD_MAX in ms: a callback its limit would hold longer waits in the delay path instead. */
  limitHoldMs: number;
  /** The ordered shards this worker owns (ordered-keys.ts); absent: the worker consumes none. */
  ordered?: OrderedKeys | undefined;
}

/** Each stage's few dependencies, worked out once from the context. */
export interface StageDeps {
  jobs: JobDeps;
  admission: AdmitDeps;
  attempts: AttemptDeps;
  conclusions: ConcludeDeps;
  settling: SettleDeps;
  moving: MoveDeps;
}

/** What the broker effects take of the context. */
export function effectsSettings({
  names,
  mode,
  logger,
  observer,
  settle,
  durableEvents,
}: PipelineContext): Omit<BrokerEffectsDeps, 'stopping' | 'isClosed'> {
  return { names, mode, logger, observer, settle, durableEvents };
}

/**
 * The stages' dependencies. `hooks`: what an attempt hands back to the pipeline, the scheduler's
 * answers (`apply`) and its freed slot (`freed`).
 */
export function stageDeps(
  context: PipelineContext,
  effects: MessageEffects,
  hooks: { apply: (effects: Effects<Job>) => void; freed: () => void },
): StageDeps {
  const { scheduler, clock, logger, control } = context;
  const rules: ScheduleRules = {
    retry: context.retry,
    timeoutMs: context.deliver.timeoutMs,
    failedThroughout: scheduler.failedThroughout?.bind(scheduler),
  };
  const options = context.deliver;
  return {
    jobs: { targetKey: context.targetKey, buckets: new OriginBuckets() },
    admission: { control, rules },
    attempts: {
      scheduler,
      send: (delivery, deadline, trace) => deliver(delivery, options, deadline, trace),
      tracing: context.tracing,
      clock,
      rules,
      ...hooks,
    },
    conclusions: { rules, random: context.random },
    settling: { effects, autoPause: context.autoPause, control, logger, clock },
    moving: { effects, scheduler, underway: new LaneMoves(), slowQueue: context.names.slowQueue, rules, clock },
  };
}
