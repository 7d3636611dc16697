import { timingSafeEqual } from 'node:crypto';
import { RelayError, type RelayErrorCode } from '../errors.js';
import { computeSignature } from './sign-callback.js';
import { parseSigningSecrets } from '../formats/signing-secrets.js';

/**
 * Stable codes of {@link SignatureError} (docs/errors.md); branch on them, never on message text.
 * - `CR_ERR_SIGNATURE_MISSING`: `webhook-id`, `webhook-timestamp` or `webhook-signature` is absent or empty.
 * - `CR_ERR_SIGNATURE_INVALID`: a header is malformed, or no `v1` signature matches any secret (wrong
 *   secret, or the id, timestamp or body were altered — e.g. the body was re-serialised before verifying).
 * - `CR_ERR_SIGNATURE_EXPIRED`: `webhook-timestamp` is further than the tolerance from now, in the past
 *   (a replay, or a request that sat in a queue) or in the future (clock skew).
 */
export type SignatureErrorCode = Extract<
  RelayErrorCode,
  'CR_ERR_SIGNATURE_MISSING' | 'CR_ERR_SIGNATURE_INVALID' | 'CR_ERR_SIGNATURE_EXPIRED'
>;

/** Thrown by {@link verifyCallback} when a request must be refused; a {@link RelayError} whose `code` is stable. */
export class SignatureError extends RelayError<SignatureErrorCode> {
  constructor(code: SignatureErrorCode, message: string) {
    super(code, message);
    this.name = 'SignatureError';
  }
}

/** A fetch-style `Headers` object (Fetch API, undici, Hono, Next.js …): lookup is case-insensitive. */
export interface HeaderGetter {
  get(name: string): string | null;
}

/** Request headers: Node's `IncomingHttpHeaders`, any plain object (names matched case-insensitively), or `Headers`. */
export type CallbackHeaders = Readonly<Record<string, string | readonly string[] | undefined>> | HeaderGetter;

/** Input of {@link verifyCallback}. */
export interface VerifyCallbackOptions {
  /**
   * The endpoint's secret(s): `whsec_<base64>` (the bare base64 is accepted too, as in the reference
   * libraries). An array, or one string with space-separated secrets, accepts a signature by any of
   * them, which is how a receiver rides through a rotation.
   */
  secret: string | readonly string[];
  /** The request headers. */
  headers: CallbackHeaders;
  /** The raw request body exactly as received, before any JSON parsing; a string is taken as UTF-8. */
  body: string | Uint8Array;
  /** Largest accepted distance, in seconds, between `webhook-timestamp` and now, either way. Default `300`. */
  toleranceSeconds?: number;
  /** The current time in seconds since the epoch. Default `Math.floor(Date.now() / 1000)`. */
  nowSeconds?: number;
}

/** What a verified request carries; `id` is the idempotency key. */
export interface VerifiedCallback {
  /** `webhook-id`: the same on every retry and DLQ replay of one callback, so deduplicate on it. */
  id: string;
  /** `webhook-timestamp`: when this attempt was signed, seconds since the epoch. */
  timestamp: number;
}

const MAX_TIMESTAMP_DIGITS = 15; // keeps the value a safe integer; seconds for the next ~30 million years

/**
 * Verifies a Standard Webhooks request signed by callback-relay (or any Standard Webhooks sender):
 * the three headers are present, the timestamp is an integer within `toleranceSeconds` of now, and at
 * least one `v1,` signature in `webhook-signature` matches one of the secrets (constant-time
 * comparison; other versions such as `v1a` are ignored). Returns the id and timestamp.
 *
 * Throws {@link SignatureError} (see {@link SignatureErrorCode}) for a request to refuse, and
 * `RelayError` `CR_ERR_CONFIG` (field `secret` or `toleranceSeconds`) when the receiver's own
 * configuration is wrong — that one is a bug to fix, not a request to refuse.
 */
export function verifyCallback(options: VerifyCallbackOptions): VerifiedCallback {
  const { headers, body, toleranceSeconds = 300, nowSeconds = Math.floor(Date.now() / 1000) } = options;
  const secrets = typeof options.secret === 'string' ? options.secret : options.secret.join(' ');
  const keys = parseSigningSecrets(secrets, 'secret', { requirePrefix: false });
  if (!Number.isFinite(toleranceSeconds) || toleranceSeconds < 0) {
    throw new RelayError('CR_ERR_CONFIG', `toleranceSeconds: must be a finite number ≥ 0, got ${String(toleranceSeconds)}`, {
      field: 'toleranceSeconds',
    });
  }
  if (!Number.isFinite(nowSeconds)) {
    throw new RelayError('CR_ERR_CONFIG', `nowSeconds: must be a finite number, got ${String(nowSeconds)}`, { field: 'nowSeconds' });
  }

  const id = single(headers, 'webhook-id');
  const timestampText = single(headers, 'webhook-timestamp');
  const signatures = headerValues(headers, 'webhook-signature')
    .flatMap((value) => value.split(/\s+/))
    // A sender or proxy that repeats the header may have it joined with ", " (as Node and Headers do).
    .map((token) => token.replace(/,$/, ''))
    .filter((token) => token !== '');
  if (signatures.length === 0) throw missing('webhook-signature');

  if (!/^\d+$/.test(timestampText) || timestampText.length > MAX_TIMESTAMP_DIGITS) {
    throw new SignatureError('CR_ERR_SIGNATURE_INVALID', 'webhook-timestamp: must be an integer number of seconds since the epoch');
  }
  const timestamp = Number(timestampText);
  const age = nowSeconds - timestamp;
  if (Math.abs(age) > toleranceSeconds) {
    const when = age > 0 ? `${age}s in the past` : `${-age}s in the future`;
    throw new SignatureError('CR_ERR_SIGNATURE_EXPIRED', `webhook-timestamp: is ${when}; the tolerance is ${toleranceSeconds}s`);
  }

  const candidates = signatures.filter((token) => token.startsWith('v1,')).map((token) => Buffer.from(token.slice(3), 'utf8'));
  if (candidates.length === 0) throw new SignatureError('CR_ERR_SIGNATURE_INVALID', 'webhook-signature: has no v1 signature');
  // The signed content uses the timestamp text as received, so what is checked is exactly what was signed.
  const expected = keys.map((key) => Buffer.from(computeSignature(key.key, id, timestampText, body), 'utf8'));
  const matches = candidates.some((candidate) =>
    // timingSafeEqual throws on unequal lengths; a length mismatch is simply no match.
    expected.some((signature) => signature.length === candidate.length && timingSafeEqual(signature, candidate)),
  );
  if (!matches) throw new SignatureError('CR_ERR_SIGNATURE_INVALID', 'webhook-signature: no signature matches the secret(s)');
  return { id, timestamp };
}

function missing(name: string): SignatureError {
  return new SignatureError('CR_ERR_SIGNATURE_MISSING', `${name}: header is missing or empty`);
}

/** The header's one value; several different values make the request ambiguous, so it is refused. */
function single(headers: CallbackHeaders, name: string): string {
  const values = [...new Set(headerValues(headers, name))];
  if (values.length === 0) throw missing(name);
  if (values.length > 1) throw new SignatureError('CR_ERR_SIGNATURE_INVALID', `${name}: has ${values.length} different values`);
  return values[0] as string;
}

/** Every non-empty, trimmed value of a header, whatever the case of its name and the shape of `headers`. */
function headerValues(headers: CallbackHeaders, name: string): string[] {
  if (typeof headers.get === 'function') {
    const value = (headers as HeaderGetter).get(name);
    return value === null || value.trim() === '' ? [] : [value.trim()];
  }
  const values: string[] = [];
  for (const [key, value] of Object.entries(headers as Readonly<Record<string, string | readonly string[] | undefined>>)) {
    if (key.toLowerCase() !== name || value === undefined) continue;
    for (const item of typeof value === 'string' ? [value] : value) {
      if (typeof item === 'string' && item.trim() !== '') values.push(item.trim());
    }
  }
  return values;
}
