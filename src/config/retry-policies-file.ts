import type { RelayError } from '../errors.js';
import { configError, isObject, readJsonObject } from './json-file.js';
import { isValidPolicyName } from '../message/callback.js';
import { headerTableSize } from '../message/header-table-size.js';
import { policyHeaders } from './policy-headers.js';
import { noPolicies, resolvePolicy, type MessagePolicy, type PolicyDefaults, type RetryPolicies } from '../policy/message-policy.js';
import { parsePolicyFields, POLICY_FIELDS, type RawPolicyFields } from './policy-fields.js';

/**
 * The most header bytes a policy may add to each retry copy. A copy's header table must fit in
 * AMQP_HEADER_TABLE_LIMIT: the producer's headers take up to MAX_PRODUCER_HEADER_BYTES, the relay's
 * own retry state up to about 2 KiB of the 4 KiB left (a 500-character last error included).
 */
export const MAX_POLICY_HEADER_BYTES = 1_024;

const SETTING = 'RETRY_POLICIES_FILE';

/**
 * Reads RETRY_POLICIES_FILE once, at start: a JSON object of policy name → `{ schedule, maxAttempts,
 * timeout, successBody }`, every field optional and checked as its setting is (RETRY_SCHEDULE,
 * MAX_ATTEMPTS, HTTP_TIMEOUT, SUCCESS_BODY). Each policy is resolved against the worker's defaults
 * here, so no message resolves anything. An empty `file` means no named policies. Throws
 * `CR_ERR_CONFIG` naming the file, the policy and the field.
 */
export function loadRetryPolicies(file: string, defaults: PolicyDefaults): RetryPolicies {
  if (file === '') return noPolicies(defaults);
  const where = `${SETTING} (${file})`;
  const parsed = readJsonObject(file, SETTING, where, 'policy name → policy');
  const byName = new Map<string, MessagePolicy>();
  for (const [name, entry] of Object.entries(parsed))
    byName.set(name, loadPolicy(name, entry, defaults, `${where}: policy ${JSON.stringify(name)}`));
  return { defaults, byName };
}

function loadPolicy(name: string, entry: unknown, defaults: PolicyDefaults, where: string): MessagePolicy {
  const fail = (problem: string, field?: string): RelayError =>
    configError(`${where}: ${problem}`, field === undefined ? name : `${name}.${field}`);
  if (!isValidPolicyName(name))
    throw fail(
      'the name must be 1-64 letters, digits, ".", "_", ":" or "-", starting with a letter or digit (what a callback\'s policy field accepts)',
    );
  if (!isObject(entry)) throw fail(`must be an object of ${POLICY_FIELDS.join(', ')} (each optional)`);
  for (const key of Object.keys(entry)) {
    if (!(POLICY_FIELDS as readonly string[]).includes(key)) throw fail(`${key}: is not a policy field (${POLICY_FIELDS.join(', ')})`, key);
  }
  const fields = parsePolicyFields(entry as RawPolicyFields, (field, problem) => fail(`${field}: ${problem}`, field));
  const policy = resolvePolicy(name, fields, defaults);
  const bytes = headerTableSize(policyHeaders(policy));
  if (bytes > MAX_POLICY_HEADER_BYTES) {
    throw fail(`schedule, successBody: take ${bytes} bytes of headers on each retry copy, over the limit of ${MAX_POLICY_HEADER_BYTES}`);
  }
  return policy;
}
