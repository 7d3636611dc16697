import type convict from 'convict';
import type { PolicyFields } from '../policy/message-policy.js';
import { durationList, positiveDuration, positiveInt } from './formats.js';

/** The fields of a retry policy as written (file or headers), and the setting each one stands in for. */
export const POLICY_FIELDS = ['schedule', 'maxAttempts', 'timeout', 'successBody'] as const;
export type PolicyFieldName = (typeof POLICY_FIELDS)[number];

/** The raw values of a policy's fields; `undefined` where a field is absent. */
export type RawPolicyFields = Partial<Record<PolicyFieldName, unknown>>;

/**
 * Reads and checks a policy's fields with the formats of the settings they stand in for
 * (RETRY_SCHEDULE, MAX_ATTEMPTS, HTTP_TIMEOUT, SUCCESS_BODY), so a policy accepts exactly what the
 * setting does. Throws what `fail` makes of the first bad field and its problem (`must be …: value
 * was …`), so each source names the field its own way (a JSON key, a header) with its own error code.
 */
export function parsePolicyFields(raw: RawPolicyFields, fail: (field: PolicyFieldName, problem: string) => Error): PolicyFields {
  const bad = (field: PolicyFieldName, problem: string): Error => fail(field, `${problem}: value was ${JSON.stringify(raw[field])}`);
  const check = <T>(field: PolicyFieldName, format: convict.Format): T | undefined => {
    const value = raw[field];
    if (value === undefined) return undefined;
    const coerced: unknown = format.coerce ? format.coerce(value) : value;
    try {
      format.validate?.(coerced, undefined as never);
    } catch (error) {
      throw bad(field, (error as Error).message);
    }
    return coerced as T;
  };
  // Text only, as RETRY_SCHEDULE is written: a JSON array of numbers would be a second spelling of it.
  if (raw.schedule !== undefined && typeof raw.schedule !== 'string') throw bad('schedule', 'must be a string such as "15s,30s,3m"');
  if (raw.successBody !== undefined && typeof raw.successBody !== 'string') throw bad('successBody', 'must be a string');
  return {
    schedule: check<number[]>('schedule', durationList),
    maxAttempts: check<number>('maxAttempts', positiveInt),
    timeoutMs: check<number>('timeout', positiveDuration),
    successBody: raw.successBody,
  };
}
