import { formatDuration } from './duration.js';
import { parsePolicyFields, type PolicyFieldName, type RawPolicyFields } from './policy-fields.js';
import { RelayError } from '../errors.js';
import { resolvePolicy, type MessagePolicy, type PolicyDefaults } from '../policy/message-policy.js';
import { HEADER, readString } from '../message/headers.js';

/** The header that carries each field of a resolved policy. */
const FIELD_HEADER: Record<PolicyFieldName, string> = {
  schedule: HEADER.schedule,
  maxAttempts: HEADER.maxAttempts,
  timeout: HEADER.timeout,
  successBody: HEADER.successBody,
};

/**
 * The headers that carry a resolved policy on a retry copy: every field, the worker's defaults
 * included, so a worker with another RETRY_POLICIES_FILE or other defaults makes the same decisions.
 * Durations are written as RETRY_SCHEDULE and HTTP_TIMEOUT are (`15s,30s,3m`, `5s`).
 */
export function policyHeaders(policy: MessagePolicy): Record<string, string | number> {
  return {
    [HEADER.policy]: policy.name,
    [HEADER.schedule]: policy.retry.schedule.map(formatDuration).join(','),
    [HEADER.maxAttempts]: policy.retry.maxAttempts,
    [HEADER.timeout]: formatDuration(policy.timeoutMs),
    [HEADER.successBody]: policy.retry.successBody,
  };
}

/** Whether a message's headers carry a policy resolved at an earlier attempt. */
export const carriesPolicy = (headers: Record<string, unknown> | undefined): boolean => headers?.[HEADER.policy] !== undefined;

/**
 * The policy `name` as the headers carry it. Jitter and the Retry-After clamp are the reading worker's.
 * Throws `CR_ERR_INVALID_CALLBACK` naming the header when one is missing, unreadable or names another
 * policy: such a message was not written by a worker, and is dead-lettered as invalid.
 */
export function readPolicyHeaders(name: string, headers: Record<string, unknown>, defaults: PolicyDefaults): MessagePolicy {
  const invalid = (header: string, problem: string): RelayError =>
    new RelayError('CR_ERR_INVALID_CALLBACK', `${header}: ${problem}`, { field: header });
  const carried = readString(headers, HEADER.policy);
  if (carried !== name)
    throw invalid(
      HEADER.policy,
      `names policy ${JSON.stringify(carried ?? headers[HEADER.policy])}, but the callback's policy is ${JSON.stringify(name)}`,
    );
  const raw: RawPolicyFields = {};
  for (const [field, header] of Object.entries(FIELD_HEADER) as [PolicyFieldName, string][]) {
    const value = headers[header];
    if (value === undefined) throw invalid(header, 'is missing');
    raw[field] = typeof value === 'number' ? value : (readString(headers, header) ?? value);
  }
  const fields = parsePolicyFields(raw, (field, problem) => invalid(FIELD_HEADER[field], problem));
  return resolvePolicy(name, fields, defaults);
}
