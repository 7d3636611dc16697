/** What stands in for the value of a header that carries a credential. */
export const HIDDEN = '[hidden]';

// Words that name a credential, anywhere in a header name: X-Auth-Key, apikey, Ocp-Apim-Subscription-Key,
// X-Amz-Security-Token, Set-Cookie, Proxy-Authorization, X-Hub-Signature-256, X-Session-Id, X-CSRF-Token…
const SECRET_WORDS = /token|secret|passw|pwd|signature|auth|key|credential|session|cookie|csrf|xsrf|bearer|jwt/i;
// The relay's own AMQP headers (x-callback-attempt, x-callback-last-status…) and the broker's
// (x-death, x-first-death-reason…) carry counts, times and reasons, never a credential: shown as is.
// A callback cannot set x-callback-* request headers (they are the relay's), so none is spared by mistake.
const OWN = /^x-(callback-|death$|first-death-|last-death-|delay$|stream-offset$|replayed-at$)/i;

/**
 * Whether a header's value must not be shown to people: its name (case-insensitive) contains one of
 * the words above, unless it is one of the relay's or the broker's own headers. Wide on purpose: a
 * harmless header hidden costs a look at the message, a credential shown costs the credential.
 */
export const isSecretHeader = (name: string): boolean => !OWN.test(name) && SECRET_WORDS.test(name);

/**
 * A copy of `headers` with the value of every secret header (isSecretHeader) replaced by `[hidden]`;
 * the names stay, so it shows that one was sent. For a callback's request headers and for the AMQP
 * headers of a message alike. Pure.
 */
export function maskHeaders<Value>(headers: Readonly<Record<string, Value>>): Record<string, Value | typeof HIDDEN> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, isSecretHeader(name) ? HIDDEN : value]));
}
