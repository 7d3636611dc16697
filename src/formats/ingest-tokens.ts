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
