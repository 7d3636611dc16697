import { createHash, timingSafeEqual } from 'node:crypto';

/** Shorter tokens are refused: a bearer token is the only thing between the internet and the queue. */
export const MIN_TOKEN_LENGTH = 16;
const TOKEN_CHARS = /^[A-Za-z0-9._~+/=-]+$/;

/**
 * The tokens of INGEST_TOKENS (comma-separated, surrounding spaces ignored). Throws a message that
 * says which entry is wrong by position, never its text: the value is a secret.
 */
export function parseIngestTokens(text: string): string[] {
  if (text.trim() === '') return [];
  return text.split(',').map((entry, index) => {
    const token = entry.trim();
    if (token.length < MIN_TOKEN_LENGTH) throw new Error(`token ${index + 1} must be at least ${MIN_TOKEN_LENGTH} characters`);
    // RFC 6750 b64token characters, so that the token can travel in `Authorization: Bearer …` as is.
    if (!TOKEN_CHARS.test(token)) throw new Error(`token ${index + 1} may hold only letters, digits and - . _ ~ + / =`);
    return token;
  });
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * A check of an `Authorization` header against the tokens. Tokens are compared as SHA-256 digests
 * with `timingSafeEqual` (equal lengths, constant time), and every token is compared every time, so
 * the answer's timing says nothing about how much of a token was right or which one matched.
 */
export function createTokenCheck(tokens: readonly string[]): (authorization: string | undefined) => boolean {
  const digests = tokens.map(digest);
  return (authorization) => {
    const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
    const presented = digest(match?.[1] ?? '');
    let ok = false;
    for (const expected of digests) ok = timingSafeEqual(presented, expected) || ok;
    return ok && match !== null;
  };
}
