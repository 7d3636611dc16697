import type { Dispatcher } from 'undici';
import { AutoPause } from '../control/auto-pause.js';
import type { ControlView } from '../control/control-state.js';
import { createDurableEvents } from '../events/durable-events.js';
import type { ArrivalOrder } from '../isolation/scheduler.js';
import type { TargetIsolation } from '../isolation/target-isolation.js';
import type { Logger } from '../logger.js';
import type { Random } from '../policy/jitter.js';
import type { PipelineObserver } from '../reports.js';
import type { ResolvedTopology } from '../topology/connect-topology.js';
import type { Tracing } from '../tracing/tracing.js';
import type { Job, Lane, PipelineContext } from './pipeline.js';
import type { WorkerSettings } from './worker-settings.js';

/** The parts a worker made at its start (worker.ts), which its pipeline's context takes as they are. */
export interface PipelineParts {
  topology: ResolvedTopology;
  dispatcher: Dispatcher;
  scheduler: TargetIsolation<Job> | ArrivalOrder<Job>;
  control: ControlView;
  observer: PipelineObserver;
  tracing: Tracing | undefined;
  clock: () => number;
  random: Random;
  logger: Logger;
  /** Declares the topology again (topology/connect-topology.ts): shared by settle, lane reopens and the P.due mover. */
  redeclare: () => Promise<void>;
  /** How many unsettled messages a lane's window holds beyond the line where what queues behind them still comes in. */
  laneExcess: (lane: Lane) => number;
}

/** The pipeline's context: the worker's settings and the parts it made, put together once. */
export function pipelineContext(settings: WorkerSettings, parts: PipelineParts): PipelineContext {
  const { topology, clock } = parts;
  const { delivery, retry } = settings;
  return {
    scheduler: parts.scheduler,
    control: parts.control,
    observer: parts.observer,
    tracing: parts.tracing,
    clock,
    random: parts.random,
    logger: parts.logger,
    names: topology.names,
    mode: topology.mode,
    maxPayloadBytes: delivery.maxPayloadBytes,
    retry,
    policies: settings.policies,
    deliver: {
      timeoutMs: delivery.timeoutMs,
      responseBodyLimit: delivery.responseBodyLimit,
      keepBody: retry.successBody !== '',
      dispatcher: parts.dispatcher,
      sign: delivery.sign,
    },
    targetKey: settings.targetKey,
    // A copy that came back unroutable (an operator deleted P.dead, P.slow, a level or a binding) declares the topology again.
    settle: { confirmTimeoutMs: settings.publishTimeoutMs, redeclare: parts.redeclare },
    laneExcess: parts.laneExcess,
    limitHoldMs: settings.limitHoldMs,
    autoPause: settings.autoPauseAfterMs > 0 ? new AutoPause(settings.autoPauseAfterMs) : undefined,
    durableEvents:
      settings.events === 'durable' ? createDurableEvents(topology.names.eventsExchange, clock, settings.publishTimeoutMs) : undefined,
  };
}
