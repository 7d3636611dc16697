import type { ControlReader } from '../control/control-reader.js';
import type { FleetPresence } from '../control/fleet-presence.js';
import type { TargetLimit } from '../formats/target-limit.js';
import { targetOf, type TargetIsolation, type TargetKey } from '../isolation/target-isolation.js';
import type { Logger } from '../logger.js';

export interface LimitSources {
  /** TARGET_LIMITS_FILE, read at start. */
  file: ReadonlyMap<string, TargetLimit>;
  control: ControlReader;
  targetKey: TargetKey;
  clock: () => number;
  logger: Logger;
  /** A limit, a back-off or the fleet changed: held targets may start now (pipeline.ts limitsChanged). */
  changed: () => void;
}

/**
 * Feeds the operators' limits into the scheduler: those of TARGET_LIMITS_FILE, then those of the
 * control stream, which win (a cleared limit there clears the file's), and every limit marker read
 * from now on; and the back-offs the other workers broadcast. Registered as soon as the control
 * reader has read the stream, before any message is consumed.
 */
export function applyLimits(isolation: TargetIsolation<unknown>, sources: LimitSources): void {
  const { control, clock, targetKey } = sources;
  const set = (origin: string, limit: TargetLimit | undefined): void => isolation.setLimit(targetOf(origin, targetKey), limit, clock());
  const named = new Set(control.originLimits().map(({ origin }) => origin));
  for (const [origin, limit] of sources.file) if (!named.has(origin)) set(origin, limit);
  for (const { origin, limit } of control.originLimits()) set(origin, limit ?? undefined);
  control.onLimit((origin, limit) => {
    set(origin, limit ?? undefined);
    sources.logger.info({ origin, limit }, limit === null ? 'target limit cleared' : 'target limit set');
    sources.changed();
  });
  control.onBackoff((backoff) => {
    isolation.shareBackoff(backoff, clock());
    sources.changed();
  });
}

/** Each limit's share follows the live workers (fleet-presence.ts). */
export function followFleet(isolation: TargetIsolation<unknown>, presence: FleetPresence, clock: () => number, changed: () => void): void {
  isolation.setFleet(presence.fleet, clock());
  presence.onChange((fleet) => {
    isolation.setFleet(fleet, clock());
    changed();
  });
}
