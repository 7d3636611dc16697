import type { IsolationPolicy } from '../../../src/isolation/target-isolation.js';

/** Small isolation thresholds for the unit tests: 10 slots, 2 to start with, 200 ms to overflow. */
export const POLICY: IsolationPolicy = {
  window: 20,
  degradeThreshold: 5,
  recoverThreshold: 2,
  quietPeriodMs: 30_000,
  maxTargets: 10_000,
  capacity: 10,
  perTarget: 10,
  initialPerTarget: 2,
  probesPerTarget: 1,
  maxProbes: 2,
  slowThresholdMs: 3_000,
  overflowAfterMs: 200,
};
