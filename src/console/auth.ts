import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ConsoleToken } from '../formats/console-tokens.js';

/** The session cookie's name. */
export const SESSION_COOKIE = 'cr_console';
/** How long a login lasts. */
export const SESSION_MS = 12 * 3_600_000;

/** Who is asking, and how they proved it. */
export interface Operator {
  /** The token's name from CONSOLE_TOKENS: logged with every action. */
  name: string;
  /** `cookie`: a browser session, whose actions need the CSRF token; `bearer`: an `Authorization` header. */
  via: 'cookie' | 'bearer';
  /** The session cookie's value (for `cookie`): the CSRF token is derived from it. */
  session?: string;
  /** The session's id and expiry (for `cookie`): a logout ends that session on every replica. */
  sessionId?: string;
  expires?: number;
}

/** Which sessions a logout ended (session-ends.ts, read from P.control by every replica). */
export interface SessionEnds {
  has(sessionId: string): boolean;
}

/** A new session id: 128 random bits, base64url. */
const newSessionId = (): string => randomBytes(16).toString('base64url');

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();
const mac = (key: string, text: string): string => createHmac('sha256', key).update(text, 'utf8').digest('base64url');

/** Constant-time comparison of two strings of any length (digests have equal lengths). */
const same = (a: string, b: string): boolean => timingSafeEqual(digest(a), digest(b));

/**
 * Authentication and CSRF for the console, so that any replica answers any request: a session cookie
 * is `name.expires.id.mac`, the MAC keyed by that operator's token, so it is valid on every replica
 * with the same CONSOLE_TOKENS and ends when the token is changed or removed. A logout ends it too:
 * its id is then in `ended`, which every replica reads from P.control. The CSRF token of a
 * session is a MAC of its cookie, put in each form's hidden field and checked on every POST. Pure
 * apart from node:crypto; the clock is injected.
 */
export class ConsoleAuth {
  constructor(
    private readonly tokens: readonly ConsoleToken[],
    private readonly clock: () => number,
    private readonly ended: SessionEnds = { has: () => false },
    private readonly sessionId: () => string = newSessionId,
  ) {}

  /** The operator whose token this is, comparing against every token every time (no timing hint). */
  byToken(presented: string): ConsoleToken | undefined {
    let found: ConsoleToken | undefined;
    for (const entry of this.tokens) if (same(presented, entry.token) && found === undefined) found = entry;
    return found;
  }

  /** `Authorization: Bearer <token>`. */
  fromBearer(authorization: string | undefined): Operator | undefined {
    const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
    const entry = match?.[1] === undefined ? undefined : this.byToken(match[1]);
    return entry && { name: entry.name, via: 'bearer' };
  }

  /** A new session cookie value for `entry`. */
  newSession(entry: ConsoleToken): string {
    const body = `${entry.name}.${this.clock() + SESSION_MS}.${this.sessionId()}`;
    return `${body}.${mac(entry.token, `session.${body}`)}`;
  }

  /** The operator of a session cookie value, if it is genuine, unexpired, not logged out, and its token still configured. */
  fromSession(value: string | undefined): Operator | undefined {
    const match = /^([A-Za-z0-9._-]{1,64})\.(\d{1,15})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(value ?? '');
    if (!match || value === undefined) return undefined;
    const [, name = '', expires = '', id = '', presented = ''] = match;
    const entry = this.tokens.find((token) => token.name === name);
    if (!entry || Number(expires) < this.clock()) return undefined;
    if (!same(presented, mac(entry.token, `session.${name}.${expires}.${id}`)) || this.ended.has(id)) return undefined;
    return { name, via: 'cookie', session: value, sessionId: id, expires: Number(expires) };
  }

  /** The CSRF token of a session: forms carry it in a hidden field. */
  csrfToken(operator: Operator): string {
    const entry = this.tokens.find((token) => token.name === operator.name);
    return operator.session === undefined || entry === undefined ? '' : mac(entry.token, `csrf.${operator.session}`);
  }

  /** Whether a POST may act: a bearer request carries no ambient credential; a cookie session must send its CSRF token. */
  csrfOk(operator: Operator, presented: string | undefined): boolean {
    if (operator.via === 'bearer') return true;
    const expected = this.csrfToken(operator);
    return expected !== '' && presented !== undefined && same(presented, expected);
  }
}

/** A cookie header's value of `name`, or `undefined`. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
