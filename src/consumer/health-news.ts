import type { ControlView } from '../control/control-state.js';
import type { Effects } from '../isolation/scheduler.js';
import type { Logger } from '../logger.js';
import type { PipelineObserver } from '../reports.js';

/**
 * What this worker tells of its targets' health: a circuit transition is logged (one line), reported
 * and, unless another worker's it took over, broadcast on P.control; a receiver's request to slow
 * down is broadcast too, so the fleet backs off together.
 */
export class HealthNews {
  constructor(
    private readonly logger: Logger,
    private readonly observer: Pick<PipelineObserver, 'transition'>,
    private readonly control: Pick<ControlView, 'broadcastHealth' | 'broadcastBackoff'> | undefined,
  ) {}

  /** Tells what a scheduler's answer changed; true when a circuit opened (its first probe waits to be started). */
  tell({ transition, backoff }: Pick<Effects<unknown>, 'transition' | 'backoff'>): boolean {
    if (backoff) this.control?.broadcastBackoff?.(backoff);
    if (!transition) return false;
    if (!transition.shared) this.control?.broadcastHealth?.(transition.target, transition.to);
    this.logger.warn(
      { ...transition },
      transition.to === 'degraded' ? 'target degraded: circuit open, attempts deferred but for probes' : 'target recovered: circuit closed',
    );
    this.observer.transition(transition);
    return transition.to === 'degraded';
  }
}
