import type { RelayConfig } from '../config/load-config.js';
import { loadRetryPolicies } from '../config/retry-policies-file.js';
import { loadTargetLimits } from '../config/target-limits-file.js';
import type { TargetLimit } from '../formats/target-limit.js';
import { parseCidrList, type AddressPolicy } from '../http/address-policy.js';
import type { IsolationPolicy, TargetKey } from '../isolation/target-isolation.js';
import type { RetryPolicy } from '../policy/decide.js';
import type { RetryPolicies } from '../policy/message-policy.js';
import { createSigner, type Signer } from '../signing/create-signer.js';

/** How the worker consumes: the slots it holds and how long a stop waits for them. */
export interface ConsumeSettings {
  /** Deliveries in flight at most (PREFETCH). */
  prefetch: number;
  /**
   * Unacked messages per queue consumer: PREFETCH, and twice that with isolation on. The second
   * PREFETCH is a look-ahead: a target that holds every slot of its lane still has messages waiting in
   * the worker, so isolation sees it is busy and moves its excess out of the lane (overflow).
   */
  queuePrefetch: number;
  /**
   * Unacked messages per ordered shard consumer: a tenth of PREFETCH, at least 10. A worker's share of
   * deliveries follows its consumers' windows, so beside the lanes' a shard's small window keeps
   * unordered traffic at its rate; alone, ordered traffic still fills the worker (a key's callbacks are
   * spread over its shard, and no more than a quarter of the window waits behind one key: KeyOrder).
   */
  orderedPrefetch: number;
  /** Plugin mode: moves from P.due into the lanes at once (DUE_PREFETCH, default PREFETCH). */
  duePrefetch: number;
  drainTimeoutMs: number;
  /** `/metrics`, `/healthz`, `/readyz`; 0 = off. */
  metricsPort: number;
  /** METRICS_HOST: the address that server listens on. */
  metricsHost: string;
}

/** The limits of one HTTP attempt (a callback's named policy may set its own timeout and success body). */
export interface DeliverySettings {
  timeoutMs: number;
  responseBodyLimit: number;
  maxPayloadBytes: number;
  /** Standard Webhooks signatures, when a secret applies to the target. */
  sign: Signer | undefined;
}

/** Every value the worker needs, each worked out once from the configuration. */
export interface WorkerSettings {
  consume: ConsumeSettings;
  delivery: DeliverySettings;
  /** The worker's own retry policy: a callback without a named policy is decided by it. */
  retry: RetryPolicy;
  /** RETRY_POLICIES_FILE, read and checked. */
  policies: RetryPolicies;
  /** Absent with ISOLATION=off: then messages are attempted in arrival order, PREFETCH at a time. */
  isolation: IsolationPolicy | undefined;
  targetKey: TargetKey;
  addressPolicy: AddressPolicy;
  events: RelayConfig['events'];
  /** AUTO_PAUSE_AFTER in ms; 0 = never. */
  autoPauseAfterMs: number;
  /** How long any publish may wait for the broker's confirm (PUBLISH_TIMEOUT). */
  publishTimeoutMs: number;
  /** TARGET_LIMITS_FILE, read and checked: origin → fleet-wide limit. */
  targetLimits: Map<string, TargetLimit>;
  /** LIMIT_HOLD_MAX in ms: the longest a callback waits unacked for its limit. */
  limitHoldMs: number;
}

/**
 * Turns a validated configuration into the worker's settings. Files are read here (RETRY_POLICIES_FILE,
 * TARGET_LIMITS_FILE, signing secrets), so a bad one stops the worker at start with `CR_ERR_CONFIG`, naming the setting.
 */
export function resolveWorkerSettings(config: RelayConfig): WorkerSettings {
  const retry: RetryPolicy = {
    schedule: config.retrySchedule,
    maxAttempts: config.maxAttempts,
    jitter: config.retryJitter,
    retryAfterMaxMs: config.retryAfterMax,
    successBody: config.successBody,
  };
  return {
    consume: {
      prefetch: config.prefetch,
      queuePrefetch: config.isolation === 'on' ? 2 * config.prefetch : config.prefetch,
      orderedPrefetch: Math.max(10, Math.ceil(config.prefetch / 10)),
      duePrefetch: config.duePrefetch,
      drainTimeoutMs: config.drainTimeout,
      metricsPort: config.metricsPort,
      metricsHost: config.metricsHost,
    },
    delivery: {
      timeoutMs: config.httpTimeout,
      responseBodyLimit: config.responseBodyLimit,
      maxPayloadBytes: config.maxPayloadBytes,
      sign: createSigner(config),
    },
    retry,
    policies: loadRetryPolicies(config.retryPoliciesFile, { retry, timeoutMs: config.httpTimeout }),
    isolation: config.isolation === 'on' ? isolationPolicy(config) : undefined,
    targetKey: config.targetKey,
    addressPolicy: {
      strict: config.targetPolicy === 'strict',
      allow: parseCidrList(config.targetAllow, 'TARGET_ALLOW'),
      deny: parseCidrList(config.targetDeny, 'TARGET_DENY'),
    },
    events: config.events,
    autoPauseAfterMs: config.autoPauseAfter,
    publishTimeoutMs: config.publishTimeout,
    targetLimits: loadTargetLimits(config.targetLimitsFile),
    limitHoldMs: config.limitHoldMax,
  };
}

/** The isolation thresholds of a configuration, for the pure policy. */
export function isolationPolicy(config: RelayConfig): IsolationPolicy {
  return {
    window: config.healthWindow,
    degradeThreshold: config.degradeThreshold,
    recoverThreshold: config.recoverThreshold,
    quietPeriodMs: config.quietPeriod,
    maxTargets: config.healthMaxTargets,
    capacity: config.prefetch,
    // TARGET_CONCURRENCY caps a target at most at PREFETCH (load-config resolves its default).
    perTarget: config.targetConcurrency,
    initialPerTarget: config.targetInitialConcurrency,
    probesPerTarget: config.probeConcurrency,
    maxProbes: config.maxProbes,
    overflowAfterMs: config.overflowAfter,
    // A timeout is always slow, even when SLOW_THRESHOLD is set at or above HTTP_TIMEOUT.
    slowThresholdMs: Math.min(config.slowThreshold, config.httpTimeout),
  };
}
