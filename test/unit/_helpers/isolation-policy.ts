import type { IsolationPolicy } from '../../../src/policy/target-isolation.js';

/** Seed 002 defaults with PREFETCH 100: 10 per target, 1 probe per target, 10 probes, slow at 3s, 50 waiting. */
export const SEED_002_POLICY: IsolationPolicy = {
  window: 20,
  degradeThreshold: 10,
  recoverThreshold: 5,
  quietPeriodMs: 30_000,
  maxTargets: 10_000,
  perTarget: 10,
  initialPerTarget: 1_000,
  probesPerTarget: 1,
  maxProbes: 10,
  slowThresholdMs: 3_000,
  successBody: '',
  waitingPerTarget: 50,
  maxWaiting: 50,
};
