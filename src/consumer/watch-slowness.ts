import type { Transition } from '../policy/endpoint-health.js';
import type { TargetIsolation } from '../policy/target-isolation.js';

/**
 * Runs an attempt; if it outlasts the slow threshold it is reported as abnormal right then, so a
 * hanging target is found after SLOW_THRESHOLD instead of after HTTP_TIMEOUT.
 */
export async function watchSlowness<T>(
  isolation: TargetIsolation | undefined,
  target: string,
  clock: () => number,
  changed: (transition: Transition | undefined) => void,
  attempt: (wasOverdue: () => boolean) => Promise<T>,
): Promise<T> {
  if (!isolation) return attempt(() => false);
  let overdue = false;
  const timer = setTimeout(() => {
    overdue = true;
    changed(isolation.overdue(target, clock()));
  }, isolation.slowThresholdMs);
  try {
    return await attempt(() => {
      clearTimeout(timer);
      return overdue;
    });
  } finally {
    clearTimeout(timer);
  }
}
