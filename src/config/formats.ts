import { isIP } from 'node:net';
import convict from 'convict';
import { cidrListProblem } from '../formats/cidr.js';
import { parseConsoleTokens } from '../formats/console-tokens.js';
import { parseIngestTokens } from '../formats/ingest-tokens.js';
import { LANE_BUCKETS, MAX_LEVEL_DELAY_MS as MAX_DELAY_MS } from '../formats/limits.js';
import { signingSecretsProblem } from '../formats/signing-secrets.js';
import { amqpUrls } from './amqp-urls.js';
import { formatDuration, parseDuration, parseDurationList } from './duration.js';

/** A duration from 1ms to the longest delay level (HTTP_TIMEOUT, RETRY_AFTER_MAX, a retry policy's timeout). */
export const positiveDuration: convict.Format = {
  coerce: (value: unknown) => (typeof value === 'string' ? (parseDuration(value) ?? value) : value),
  validate: (value: unknown) => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_DELAY_MS) {
      throw new Error(`must be a duration from 1ms to ${formatDuration(MAX_DELAY_MS)}, such as 500ms, 15s, 3m or 6h`);
    }
  },
};

/** A non-empty comma-separated list of such durations (RETRY_SCHEDULE, a retry policy's schedule). */
export const durationList: convict.Format = {
  coerce: (value: unknown) => (typeof value === 'string' ? (parseDurationList(value) ?? value) : value),
  validate: (value: unknown) => {
    const ok = Array.isArray(value) && value.length > 0 && value.every((ms) => Number.isInteger(ms) && ms > 0 && ms <= MAX_DELAY_MS);
    if (!ok) throw new Error(`must be a comma-separated list of durations from 1ms to ${formatDuration(MAX_DELAY_MS)}, such as 15s,30s,3m`);
  },
};

/** A whole number ≥ 1 (MAX_ATTEMPTS, a retry policy's maxAttempts). */
export const positiveInt: convict.Format = {
  coerce: (value: unknown) => (typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value),
  validate: (value: unknown) => {
    if (!Number.isInteger(value) || (value as number) < 1) throw new Error('must be a whole number ≥ 1');
  },
};

/**
 * Custom convict formats. `coerce` never throws: it hands anything it cannot parse to `validate`,
 * whose message convict reports together with the setting name and the raw value.
 */
let registered = false;

export function registerFormats(): void {
  if (registered) return;
  registered = true;
  convict.addFormats({
    duration: {
      coerce: (value: unknown) => (typeof value === 'string' ? (parseDuration(value) ?? value) : value),
      validate: (value: unknown) => {
        if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
          throw new Error('must be a duration such as 500ms, 15s, 3m or 6h');
        }
      },
    },
    'positive-duration': positiveDuration,
    'duration-list': durationList,
    'positive-int': positiveInt,
    prefetch: {
      coerce: (value: unknown) => (typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value),
      validate: (value: unknown) => {
        // basic.qos carries prefetch-count as an unsigned 16-bit integer.
        if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > 65_535)
          throw new Error('must be a whole number from 1 to 65535');
      },
    },
    'optional-prefetch': {
      coerce: (value: unknown) => (value === '' ? null : typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value),
      validate: (value: unknown) => {
        if (value !== null && (!Number.isInteger(value) || (value as number) < 1 || (value as number) > 65_535)) {
          throw new Error('must be a whole number from 1 to 65535, or empty for the default');
        }
      },
    },
    lanes: {
      coerce: (value: unknown) => (typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value),
      validate: (value: unknown) => {
        if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > LANE_BUCKETS)
          throw new Error(`must be a whole number from 1 to ${LANE_BUCKETS}`);
      },
    },
    'optional-positive-int': {
      coerce: (value: unknown) => (value === '' ? null : typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value),
      validate: (value: unknown) => {
        if (value !== null && (!Number.isInteger(value) || (value as number) < 1)) {
          throw new Error('must be a whole number ≥ 1, or empty for the default');
        }
      },
    },
    'optional-count': {
      coerce: (value: unknown) => (value === '' ? null : typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value),
      validate: (value: unknown) => {
        if (value !== null && (!Number.isInteger(value) || (value as number) < 0))
          throw new Error('must be a whole number ≥ 0, or empty for the default');
      },
    },
    // Each names the bad entry (a secret by its position only); convict adds the setting's name.
    'signing-secrets': {
      validate: (value: unknown) => {
        const problem = value === '' ? undefined : signingSecretsProblem(String(value));
        if (problem !== undefined) throw new Error(problem);
      },
    },
    'cidr-list': {
      validate: (value: unknown) => {
        const problem = cidrListProblem(String(value));
        if (problem !== undefined) throw new Error(problem);
      },
    },
    fraction: {
      coerce: (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? Number(value) : value),
      validate: (value: unknown) => {
        if (typeof value !== 'number' || !(value >= 0 && value <= 1)) throw new Error('must be a number from 0 to 1');
      },
    },
    'amqp-url': {
      validate: (value: unknown) => {
        const urls = amqpUrls(String(value));
        if (urls.length === 0) throw new Error('must be an amqp:// or amqps:// URL with a host, or several separated by commas');
        for (const text of urls) {
          let url: URL | undefined;
          try {
            url = new URL(text);
          } catch {
            url = undefined;
          }
          if (!url || (url.protocol !== 'amqp:' && url.protocol !== 'amqps:') || url.host === '') {
            throw new Error('must be an amqp:// or amqps:// URL with a host, or several separated by commas');
          }
        }
      },
    },
    'token-list': {
      validate: (value: unknown) => void parseIngestTokens(String(value)),
    },
    'console-token-list': {
      validate: (value: unknown) => void parseConsoleTokens(String(value)),
    },
    // The broker's own syntax, passed through as the stream's x-max-age:
    // https://www.rabbitmq.com/docs/streams#retention
    'stream-max-age': {
      validate: (value: unknown) => {
        if (typeof value !== 'string' || !/^[1-9]\d{0,8}[YMDhms]$/.test(value))
          throw new Error('must be a whole number and one unit of Y, M, D, h, m or s, such as 7D or 12h');
      },
    },
    'topology-prefix': {
      validate: (value: unknown) => {
        if (typeof value !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/.test(value)) {
          throw new Error('must be 1-100 characters of letters, digits, ".", "_" or "-", starting with a letter or digit');
        }
      },
    },
    // An address to bind, not a name: a name could resolve to an interface other than the one meant.
    'listen-address': {
      validate: (value: unknown) => {
        if (typeof value !== 'string' || isIP(value) === 0)
          throw new Error(
            "must be an IP address to listen on, such as 127.0.0.1, ::1, 0.0.0.0 (every interface) or a container's own address",
          );
      },
    },
  });
}
