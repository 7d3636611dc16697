import { createHash, timingSafeEqual } from 'node:crypto';
import type { IngestToken } from '../formats/ingest-tokens.js';

export { DEFAULT_TOKEN_NAME, MIN_TOKEN_LENGTH, parseIngestTokens, type IngestToken } from '../formats/ingest-tokens.js';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * A check of an `Authorization` header against the tokens: the name of the token presented, or
 * undefined. Tokens are compared as SHA-256 digests with `timingSafeEqual` (equal lengths, constant
 * time), and every token is compared every time, so the answer's timing says nothing about how much of
 * a token was right or which one matched.
 */
export function createTokenCheck(tokens: readonly IngestToken[]): (authorization: string | undefined) => string | undefined {
  const digests = tokens.map((entry) => ({ name: entry.name, digest: digest(entry.token) }));
  return (authorization) => {
    const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
    const presented = digest(match?.[1] ?? '');
    let found: string | undefined;
    for (const expected of digests) if (timingSafeEqual(presented, expected.digest) && found === undefined) found = expected.name;
    return match === null ? undefined : found;
  };
}
