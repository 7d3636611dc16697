import type { RetryPolicy } from './decide.js';

/**
 * A named retry policy, resolved for one message: what its retries are decided by and how long each
 * of its attempts may take. Fields the policy left out hold the resolving worker's defaults.
 */
export interface MessagePolicy {
  /** The `policy` field of the callback. */
  readonly name: string;
  readonly retry: RetryPolicy;
  /** Whole-request limit of each attempt. */
  readonly timeoutMs: number;
}

/** The worker's own settings: what a message without a policy gets, and what a policy's missing fields fall back to. */
export interface PolicyDefaults {
  readonly retry: RetryPolicy;
  readonly timeoutMs: number;
}

/** The worker's named policies (RETRY_POLICIES_FILE), each already resolved against its defaults. */
export interface RetryPolicies {
  readonly defaults: PolicyDefaults;
  readonly byName: ReadonlyMap<string, MessagePolicy>;
}

/** The fields a policy may set; each one left out falls back to the defaults. */
export interface PolicyFields {
  schedule?: readonly number[] | undefined;
  maxAttempts?: number | undefined;
  timeoutMs?: number | undefined;
  successBody?: string | undefined;
}

/**
 * Resolves a policy's fields against the worker's defaults. A policy with a schedule of its own but no
 * maxAttempts gets its schedule length + 1 (MAX_ATTEMPTS's own default), not the worker's count of
 * attempts, which was chosen for another schedule. Jitter and the Retry-After clamp stay the worker's.
 */
export function resolvePolicy(name: string, fields: PolicyFields, defaults: PolicyDefaults): MessagePolicy {
  const schedule = fields.schedule ?? defaults.retry.schedule;
  const maxAttempts = fields.maxAttempts ?? (fields.schedule ? fields.schedule.length + 1 : defaults.retry.maxAttempts);
  return {
    name,
    retry: { ...defaults.retry, schedule, maxAttempts, successBody: fields.successBody ?? defaults.retry.successBody },
    timeoutMs: fields.timeoutMs ?? defaults.timeoutMs,
  };
}

/** The table of a worker without RETRY_POLICIES_FILE: only its defaults. */
export const noPolicies = (defaults: PolicyDefaults): RetryPolicies => ({ defaults, byName: new Map() });
