import { createHash, timingSafeEqual } from 'node:crypto';

export { MIN_TOKEN_LENGTH, parseIngestTokens } from '../formats/ingest-tokens.js';

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
