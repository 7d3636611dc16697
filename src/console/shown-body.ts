import { maskUrl } from '../formats/mask-url.js';
import { maskHeaders } from '../formats/secret-headers.js';

/**
 * A parked message's body as the dead-letter page shows it: JSON indented, anything else as UTF-8
 * text (escaped by the template). The callback's own request `headers` may carry a credential of the
 * receiver's (`Authorization: Bearer …`): their values are replaced by `[hidden]` (maskHeaders), and
 * its `url` is masked (maskUrl), so the console never shows one. Pure.
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
    if (typeof headers === 'object' && headers !== null && !Array.isArray(headers))
      record.headers = maskHeaders(headers as Record<string, unknown>);
    if (typeof record.url === 'string') record.url = maskUrl(record.url);
  }
  return JSON.stringify(parsed, null, 2);
}
