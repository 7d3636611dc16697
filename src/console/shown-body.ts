/** Request header names whose values are credentials for the receiver: never shown. */
const SECRET_HEADER = /^(authorization|proxy-authorization|cookie|x-api-key|api-key)$|token|secret|password|signature/i;

/**
 * A parked message's body as the dead-letter page shows it: JSON indented, anything else as UTF-8
 * text (escaped by the template). The callback's own request `headers` may carry a credential of the
 * receiver's (`Authorization: Bearer …`): their values are replaced by `[hidden]` so the console never
 * shows one. Pure.
 */
export function shownBody(content: Buffer): string {
  const text = content.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
    const record = parsed as Record<string, unknown>;
    const headers = record.headers;
    if (typeof headers === 'object' && headers !== null && !Array.isArray(headers)) {
      record.headers = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, SECRET_HEADER.test(name) ? '[hidden]' : value]));
    }
  }
  return JSON.stringify(parsed, null, 2);
}
