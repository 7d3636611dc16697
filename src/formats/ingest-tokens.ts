/** Shorter tokens are refused: a bearer token is the only thing between the internet and the queue. */
export const MIN_TOKEN_LENGTH = 16;
const TOKEN_CHARS = /^[A-Za-z0-9._~+/=-]+$/;
const NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** The name of a token listed without one: all such tokens share one Idempotency-Key scope. */
export const DEFAULT_TOKEN_NAME = 'default';

/**
 * One ingest client: the name its Idempotency-Keys are scoped to, and its secret token. Several
 * tokens may share a name: a rotation keeps the client's scope, so its keys keep their ids.
 */
export interface IngestToken {
  name: string;
  token: string;
}

/**
 * The tokens of INGEST_TOKENS: `name:token` or a bare `token` (named `default`), comma-separated,
 * surrounding spaces ignored. A token never holds `:`, so the first `:` ends the name. Throws a message
 * that says which entry is wrong by position, never its text: the value is a secret.
 */
export function parseIngestTokens(text: string): IngestToken[] {
  if (text.trim() === '') return [];
  return text.split(',').map((entry, index) => {
    const colon = entry.indexOf(':');
    const name = colon < 0 ? DEFAULT_TOKEN_NAME : entry.slice(0, colon).trim();
    const token = entry.slice(colon + 1).trim();
    if (!NAME.test(name)) throw new Error(`token ${index + 1}: the name before ":" must be 1-64 letters, digits and - . _`);
    if (token.length < MIN_TOKEN_LENGTH) throw new Error(`token ${index + 1} must be at least ${MIN_TOKEN_LENGTH} characters`);
    // RFC 6750 b64token characters, so that the token can travel in `Authorization: Bearer …` as is.
    if (!TOKEN_CHARS.test(token)) throw new Error(`token ${index + 1} may hold only letters, digits and - . _ ~ + / =`);
    return { name, token };
  });
}
