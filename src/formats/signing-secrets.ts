import { readFileSync } from 'node:fs';
import { RelayError } from '../errors.js';

/** The Standard Webhooks marker for a symmetric (HMAC-SHA256) secret. */
export const SECRET_PREFIX = 'whsec_';

/** The spec's floor for a symmetric secret: 24 random bytes (192 bits). */
export const MIN_SECRET_BYTES = 24;

/**
 * One HMAC key, decoded from a `whsec_<base64>` secret. `key` is non-enumerable so that logging or
 * JSON-serialising a config that holds keys never prints the bytes.
 */
export interface SigningKey {
  /** The raw HMAC-SHA256 key: the base64-decoded part of the secret. */
  readonly key: Buffer;
  /** Safe to log: the key's position in the list and its size, never any of its characters. */
  readonly label: string;
}

/** Options of {@link parseSigningSecrets}. */
export interface ParseSigningSecretsOptions {
  /**
   * Require the `whsec_` prefix. Default `true`: configuration must be unambiguous, because a hex or
   * passphrase secret pasted without the prefix is often also valid base64 and would silently become a
   * different key from the one the receiver holds. Receivers ({@link verifyCallback}) pass `false`, as
   * the spec's reference libraries also accept the bare base64.
   */
  requirePrefix?: boolean;
}

/**
 * Parses one or more Standard Webhooks secrets separated by whitespace (several secrets = rotation:
 * every one signs). Each must be `whsec_` + standard base64 (padding optional) of at least
 * {@link MIN_SECRET_BYTES} bytes. Throws `CR_ERR_CONFIG` naming `field` and the secret's position; the
 * message never contains any character of a secret's key material.
 *
 * @param text - the secrets, e.g. `whsec_new… whsec_old…`
 * @param field - the setting name used in error messages, e.g. `signingSecrets`
 */
export function parseSigningSecrets(text: string, field: string, options: ParseSigningSecretsOptions = {}): SigningKey[] {
  return parseFrom(text, field, '', options.requirePrefix ?? true);
}

/** Where {@link loadSigningSecrets} reads secrets from; at most one of the two may be set. */
export interface SigningSecretsSource {
  /** The secrets themselves (e.g. from an environment variable). Empty counts as unset. */
  value?: string | undefined;
  /** A file holding the secrets (e.g. a mounted Docker or Kubernetes secret). Empty counts as unset. */
  file?: string | undefined;
}

/**
 * Loads signing secrets from a value or from a file (read synchronously, surrounding whitespace trimmed,
 * secrets separated by spaces or newlines). Returns `[]` when neither is set: signing is disabled.
 * Throws `CR_ERR_CONFIG` naming `field` when both are set, when the file cannot be read (the message
 * names the file) or is empty, or when a secret is invalid (see {@link parseSigningSecrets}).
 *
 * @param source - `{ value?, file? }`; an empty string counts as unset
 * @param field - the setting name used in error messages
 */
export function loadSigningSecrets(source: SigningSecretsSource, field: string): SigningKey[] {
  const value = source.value?.trim() ?? '';
  const file = source.file?.trim() ?? '';
  if (value !== '' && file !== '') {
    // Refuse rather than pick one: a silent precedence would leave an operator rotating the wrong copy.
    throw configError(field, 'set either the secrets or a file to read them from, not both');
  }
  if (file === '') return value === '' ? [] : parseFrom(value, field, '', true);
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const reason = typeof code === 'string' ? code : 'unreadable';
    throw configError(field, `cannot read the signing secrets file ${JSON.stringify(file)} (${reason})`, error);
  }
  if (content.trim() === '') throw configError(field, `the signing secrets file ${JSON.stringify(file)} is empty`);
  return parseFrom(content, field, ` (from file ${JSON.stringify(file)})`, true);
}

/**
 * What is wrong with a value of secrets (`whsec_` required), or undefined when every one is valid.
 * Names the secret's position, never its characters.
 */
export function signingSecretsProblem(text: string): string | undefined {
  try {
    parseFrom(text, 'secrets', '', true, (problem) => new SecretProblem(problem));
    return undefined;
  } catch (error) {
    if (error instanceof SecretProblem) return error.message;
    throw error;
  }
}

class SecretProblem extends Error {}

function parseFrom(
  text: string,
  field: string,
  origin: string,
  requirePrefix: boolean,
  fail = (problem: string): Error => configError(field, problem),
): SigningKey[] {
  const secrets = text.split(/\s+/).filter((secret) => secret !== '');
  if (secrets.length === 0) throw fail(`no signing secret given${origin}; expected ${SECRET_PREFIX}<base64>`);
  return secrets.map((secret, index) => {
    const position = `secret ${index + 1} of ${secrets.length}`;
    const key = decodeSecret(secret, requirePrefix, (problem) => fail(`${position} ${describe(secret)}${origin} ${problem}`));
    return makeKey(key, `${field} ${position} (${key.length} bytes)`);
  });
}

function decodeSecret(secret: string, requirePrefix: boolean, fail: (problem: string) => Error): Buffer {
  const prefixed = secret.startsWith(SECRET_PREFIX);
  if (!prefixed && requirePrefix) throw fail(`must start with "${SECRET_PREFIX}" followed by base64`);
  const encoded = prefixed ? secret.slice(SECRET_PREFIX.length) : secret;
  if (encoded === '') throw fail(`has nothing after "${SECRET_PREFIX}"`);
  // Node's base64 decoder skips characters it does not know and accepts the URL-safe alphabet; other
  // languages' decoders differ, so anything but canonical standard base64 could yield different keys.
  const decoded = Buffer.from(encoded, 'base64');
  const canonical =
    /^[A-Za-z0-9+/]+={0,2}$/.test(encoded) &&
    (!encoded.endsWith('=') || encoded.length % 4 === 0) &&
    decoded.toString('base64').replace(/=+$/, '') === encoded.replace(/=+$/, '');
  if (!canonical) throw fail('is not valid standard base64 (A-Z a-z 0-9 + /, optional = padding)');
  if (decoded.length < MIN_SECRET_BYTES) {
    throw fail(`decodes to ${decoded.length} bytes; Standard Webhooks requires at least ${MIN_SECRET_BYTES} random bytes`);
  }
  return decoded;
}

/** A description that identifies a secret without revealing it: only the `whsec_` marker and the length. */
function describe(secret: string): string {
  const marker = secret.startsWith(SECRET_PREFIX) ? `"${SECRET_PREFIX}…", ` : 'without prefix, ';
  return `(${marker}${secret.length} characters)`;
}

function makeKey(key: Buffer, label: string): SigningKey {
  const signingKey = { label } as { label: string; key: Buffer };
  Object.defineProperty(signingKey, 'key', { value: key, enumerable: false });
  return Object.freeze(signingKey);
}

function configError(field: string, problem: string, cause?: unknown): RelayError {
  return new RelayError('CR_ERR_CONFIG', `${field}: ${problem}`, { field, ...(cause === undefined ? {} : { cause }) });
}
