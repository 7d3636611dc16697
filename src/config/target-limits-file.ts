import { configError, isObject, readJsonObject } from './json-file.js';
import { originOf } from '../formats/origin.js';
import { checkLimit, type TargetLimit } from '../formats/target-limit.js';

const SETTING = 'TARGET_LIMITS_FILE';

/**
 * Reads TARGET_LIMITS_FILE once, at start: a JSON object of origin → `{ rate, burst, concurrency }`
 * (`rate` as `20/s`, `600/m`, `1000/h` or a number per second; a rate, a concurrency or both; a
 * burst only with a rate), each checked as `callback-relay target limit` checks its flags. An empty
 * `file` means no limits. Throws `CR_ERR_CONFIG` naming the file, the origin, the field and its value.
 */
export function loadTargetLimits(file: string): Map<string, TargetLimit> {
  const limits = new Map<string, TargetLimit>();
  if (file === '') return limits;
  const where = `${SETTING} (${file})`;
  const parsed = readJsonObject(file, SETTING, where, 'origin → limit');
  for (const [key, entry] of Object.entries(parsed)) {
    const origin = originOf(key);
    if (origin === undefined)
      throw configError(`${where}: ${JSON.stringify(key)} is not an origin such as https://partner.example (no path)`, key);
    if (!isObject(entry)) throw configError(`${where}: origin ${JSON.stringify(key)}: must be an object of rate, burst, concurrency`, key);
    const limit = checkLimit(entry);
    if ('problem' in limit) {
      throw configError(
        `${where}: origin ${JSON.stringify(key)}: ${limit.field} ${limit.problem} (value was ${JSON.stringify(entry[limit.field])})`,
        `${key}.${limit.field}`,
      );
    }
    limits.set(origin, limit);
  }
  return limits;
}
