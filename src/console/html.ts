/**
 * HTML built from templates in which every interpolated value is escaped unless it is itself
 * `Html` made here. What a page shows comes from outside (a callback's body and headers, its URL,
 * a receiver's error text): escaping everything by default is what keeps it text, never markup.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Text made safe for an element's content and for a quoted attribute value. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"'`]/g, (char) => ENTITIES[char] ?? char);

/** A value in a template: `Html` as it is, arrays joined, `null`/`undefined`/`false` as nothing, the rest escaped. */
function render(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** The tagged template: html`<td>${untrusted}</td>` escapes `untrusted`. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => (out += render(value) + (strings[i + 1] ?? '')));
  return new Html(out);
}

/**
 * JSON for a `<script type="application/json">` data block, read by the page's script (a data block
 * is not executed, so the strict Content-Security-Policy allows it). `<`, `>`, `&` and the line
 * separators are written as escapes, so no value can close the element or open a comment.
 */
export function jsonData(value: unknown): Html {
  const json = JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return new Html(json);
}

/** A URL path with a query, each value encoded: `/callback?id=…`. */
export function href(path: string, query: Record<string, string | number | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(key, String(value));
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}
