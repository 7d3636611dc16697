import type { ControlMarker } from '../control/control-markers.js';
import { ControlState, type PausedOrigin } from '../control/control-state.js';

/** A target's state as the console shows it. */
export type TargetState = 'paused' | 'circuit open' | 'limited' | 'healthy';

/** Cancelled ids the console remembers (to say where a callback is); a worker keeps far more. */
const MAX_CANCELLED = 10_000;

/**
 * What the console reads from P.control: the paused and limited origins (as `target list` shows them,
 * through the workers' own ControlState) and the circuits the workers broadcast (`degraded`, `recovered`).
 * A circuit counts as open while some worker's newest broadcast for it says `degraded` and is within
 * `windowMs` (a worker that died degraded says nothing more). Pure: clock injected; at most
 * `maxTargets` targets with broadcasts are kept, the stalest forgotten first.
 */
export class ControlView {
  private readonly state: ControlState;
  /** Target → worker (the marker's `from`) → its newest broadcast. */
  private readonly health = new Map<string, Map<string, { degraded: boolean; at: number }>>();

  constructor(
    private readonly limits: { windowMs: number; maxTargets: number },
    private readonly clock: () => number,
    controlMaxAgeMs: number,
  ) {
    this.state = new ControlState({ maxCancelled: MAX_CANCELLED, maxAgeMs: controlMaxAgeMs }, clock);
  }

  apply(marker: ControlMarker): void {
    this.state.apply(marker);
    if (marker.type !== 'degraded' && marker.type !== 'recovered') return;
    const at = Date.parse(marker.at);
    const workers = this.health.get(marker.target) ?? new Map<string, { degraded: boolean; at: number }>();
    this.health.delete(marker.target);
    this.health.set(marker.target, workers);
    const previous = workers.get(marker.from);
    if (previous === undefined || previous.at <= at) workers.set(marker.from, { degraded: marker.type === 'degraded', at });
    for (const stalest of this.health.keys()) {
      if (this.health.size <= this.limits.maxTargets) break;
      this.health.delete(stalest);
    }
  }

  /** `origin`'s state; `keys` are what a worker may name it by in a broadcast (its origin, or its host with TARGET_KEY=host). */
  stateOf(origin: string, keys: readonly string[] = [origin]): TargetState {
    if (this.state.isPaused(origin)) return 'paused';
    const since = this.clock() - this.limits.windowMs;
    for (const key of keys) {
      for (const broadcast of this.health.get(key)?.values() ?? []) if (broadcast.degraded && broadcast.at >= since) return 'circuit open';
    }
    // An operator's limit from P.control (`callback-relay target limit`); a cleared one is null.
    return this.state.limitOf(origin) ? 'limited' : 'healthy';
  }

  pausedOrigins(): PausedOrigin[] {
    return this.state.pausedOrigins();
  }

  isCancelled(id: string): boolean {
    return this.state.isCancelled(id);
  }
}
