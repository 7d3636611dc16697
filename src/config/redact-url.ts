/**
 * The text with any credentials of a URL replaced by `***`, safe to log. Everything before the last
 * `@` is masked, so even input that does not parse as a URL leaks no password (it may mask more).
 */
export function redactUrl(text: string): string {
  const at = text.lastIndexOf('@');
  if (at === -1) return text;
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(text)?.[0] ?? '';
  return `${scheme}***${text.slice(at)}`;
}

/** Every URL of a comma-separated list, redacted. */
export const redactUrls = (text: string): string => text.split(',').map((url) => redactUrl(url.trim())).join(',');
