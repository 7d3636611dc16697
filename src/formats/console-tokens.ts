import { MIN_TOKEN_LENGTH } from './ingest-tokens.js';

/** One operator of the console: the name its actions are logged under, and its secret token. */
export interface ConsoleToken {
  name: string;
  token: string;
}

const NAME = /^[A-Za-z0-9._-]{1,64}$/;
const TOKEN_CHARS = /^[A-Za-z0-9._~+/=-]+$/;

/**
 * The entries of CONSOLE_TOKENS: `name:token`, comma-separated (surrounding spaces ignored). The name
 * says who did an action in the log; the token is the secret. Throws a message that names the wrong
 * entry by position and never shows a token: the value is a secret.
 */
export function parseConsoleTokens(text: string): ConsoleToken[] {
  if (text.trim() === '') return [];
  const names = new Set<string>();
  return text.split(',').map((entry, index) => {
    const colon = entry.indexOf(':');
    const name = entry.slice(0, Math.max(0, colon)).trim();
    const token = entry.slice(colon + 1).trim();
    if (colon < 0 || !NAME.test(name))
      throw new Error(`entry ${index + 1} must be name:token, the name of letters, digits and - . _ (at most 64)`);
    if (names.has(name)) throw new Error(`entry ${index + 1} repeats the name ${name}`);
    names.add(name);
    if (token.length < MIN_TOKEN_LENGTH) throw new Error(`the token of ${name} must be at least ${MIN_TOKEN_LENGTH} characters`);
    // RFC 6750 b64token characters: the token may travel in `Authorization: Bearer …` as is.
    if (!TOKEN_CHARS.test(token)) throw new Error(`the token of ${name} may hold only letters, digits and - . _ ~ + / =`);
    return { name, token };
  });
}
