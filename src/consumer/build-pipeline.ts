import type { Dispatcher } from 'undici';
import type { RelayConfig } from '../config/load-config.js';
import { loadRetryPolicies } from '../config/retry-policies-file.js';
import { createDurableEvents } from '../events/durable-events.js';
import { createOutcomeEvents } from '../events/outcome-events.js';
import type { Logger } from '../logger.js';
import type { PipelineObserver } from './observer.js';
import type { Random } from '../policy/jitter.js';
import type { IsolationPolicy, TargetIsolation } from '../isolation/target-isolation.js';
import { createSigner } from '../signing/create-signer.js';
import type { ResolvedTopology } from '../topology/connect-topology.js';
import type { Tracing } from '../tracing/tracing.js';
import type { ControlView } from '../control/control-state.js';
import { createDecider } from './decide.js';
import { createMessageHandler, type Job } from './handle-message.js';
import { observeAll } from './observer.js';
import { settleOptions } from './settle-options.js';

/** The isolation thresholds of a configuration, for the pure policy. */
export function isolationPolicy(config: RelayConfig): IsolationPolicy {
  return {
    window: config.healthWindow,
    degradeThreshold: config.degradeThreshold,
    recoverThreshold: config.recoverThreshold,
    quietPeriodMs: config.quietPeriod,
    maxTargets: config.healthMaxTargets,
    capacity: config.prefetch,
    perTarget: config.targetConcurrency,
    initialPerTarget: config.targetInitialConcurrency,
    probesPerTarget: config.probeConcurrency,
    maxProbes: config.maxProbes,
    // A timeout is always slow, even when SLOW_THRESHOLD is set at or above HTTP_TIMEOUT.
    slowThresholdMs: Math.min(config.slowThreshold, config.httpTimeout),
  };
}

/** Wires the per-message pipeline from the configuration: the one place that knows every part. */
export function buildPipeline(
  config: RelayConfig,
  topology: ResolvedTopology,
  dispatcher: Dispatcher,
  logger: Logger,
  clock: () => number,
  random: Random,
  metrics: PipelineObserver,
  isolation: TargetIsolation<Job> | undefined,
  tracing?: Tracing,
  control?: ControlView,
) {
  const events = config.events === 'on' ? createOutcomeEvents(topology.names.eventsExchange, clock) : undefined;
  const retry = { schedule: config.retrySchedule, maxAttempts: config.maxAttempts, jitter: config.retryJitter, retryAfterMaxMs: config.retryAfterMax, successBody: config.successBody };
  const handle = createMessageHandler({
    names: topology.names,
    mode: topology.mode,
    maxPayloadBytes: config.maxPayloadBytes,
    policies: loadRetryPolicies(config.retryPoliciesFile, { retry, timeoutMs: config.httpTimeout }),
    deliverOptions: {
      timeoutMs: config.httpTimeout,
      responseBodyLimit: config.responseBodyLimit,
      keepBody: config.successBody !== '',
      dispatcher,
      sign: createSigner(config),
    },
    decide: createDecider(retry, clock, random),
    isolation,
    capacity: config.prefetch,
    targetKey: config.targetKey,
    clock,
    logger,
    observer: observeAll(events ? [metrics, events] : [metrics]),
    settle: settleOptions(topology, config.publishTimeout),
    tracing,
    durableEvents: config.events === 'durable' ? createDurableEvents(topology.names.eventsExchange, clock, config.publishTimeout) : undefined,
    control,
  });
  return { ...handle, events };
}
