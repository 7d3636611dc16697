/** The least a console token may be worth: guessing it must stay out of reach even with no throttle. */
export const MIN_TOKEN_BITS = 128;
/** Shorter tokens are refused whatever their characters. */
export const MIN_TOKEN_CHARS = 24;
/** Fewer different characters than this means a pattern, not a random token. */
export const MIN_DISTINCT_CHARS = 10;

/** The character classes a token draws from, and how many characters each holds. */
const CLASSES: ReadonlyArray<{ test: RegExp; size: number }> = [
  { test: /[a-z]/, size: 26 },
  { test: /[A-Z]/, size: 26 },
  { test: /[0-9]/, size: 10 },
  { test: /[^A-Za-z0-9]/, size: 7 },
];

/** Words that mark an example token copied from documentation, never a random one. */
const PLACEHOLDERS = ['changeme', 'change-me', 'example', 'password', 'secret', 'token'];

/** The rule, as the refusal states it. */
export const TOKEN_RULE =
  `a token needs at least ${MIN_TOKEN_CHARS} characters, ${MIN_DISTINCT_CHARS} of them different, an estimated ${MIN_TOKEN_BITS} bits ` +
  '(length × log2 of the characters its classes hold: a-z 26, A-Z 26, 0-9 10, - . _ ~ + / = 7) and no placeholder word ' +
  `(${PLACEHOLDERS.join(', ')}); e.g. \`openssl rand -hex 24\` or \`openssl rand -base64 32\``;

/** A token's estimated strength: length × log2(size of the classes it uses). Pure. */
export function tokenBits(token: string): number {
  const pool = CLASSES.filter((c) => c.test.test(token)).reduce((sum, c) => sum + c.size, 0);
  return pool === 0 ? 0 : token.length * Math.log2(pool);
}

/** Why `token` is too weak, or `undefined` when it passes TOKEN_RULE. Pure; the message never holds the token. */
export function weakTokenProblem(token: string): string | undefined {
  if (token.length < MIN_TOKEN_CHARS) return `${token.length} characters`;
  const distinct = new Set(token).size;
  if (distinct < MIN_DISTINCT_CHARS) return `${distinct} different characters`;
  const bits = Math.floor(tokenBits(token));
  if (bits < MIN_TOKEN_BITS) return `about ${bits} bits`;
  const lower = token.toLowerCase();
  if (PLACEHOLDERS.some((word) => lower.includes(word))) return 'a placeholder word';
  return undefined;
}
