/** What stands in for a masked secret: user-info, a query value. */
export const MASK = '***';

/**
 * The text with any credentials of a URL (its user-info) replaced by `***`, safe to log; the rest
 * as is. Everything between the scheme and the last `@` is masked, so even input that does not
 * parse as a URL leaks no password (it may mask more). For broker URLs, whose query holds settings.
 */
export function redactUrl(text: string): string {
  const at = text.lastIndexOf('@');
  if (at === -1) return text;
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(text)?.[0] ?? '';
  return `${scheme}${MASK}${text.slice(at)}`;
}

/** Every URL of a comma-separated list, redacted. */
export const redactUrls = (text: string): string =>
  text
    .split(',')
    .map((url) => redactUrl(url.trim()))
    .join(',');

/**
 * A callback URL as people may read it (outcome events, P.history, the console, the CLI, logs):
 * user-info replaced by `***`, every query value by `***` (names kept, so `?token=***&page=***`
 * still says what was sent), a query item without `=` by `***` (it may be a bare key), and the
 * fragment dropped (never sent to the receiver anyway). Scheme, host (IPv6 in brackets), port and
 * path stay: the path is what tells callbacks apart, so a secret in a path is shown; put secrets in
 * the query or a header. Text that does not parse as a URL is masked the same way by its characters,
 * so nothing after a `?` or before an `@` leaks either. Pure; masking twice changes nothing.
 */
export function maskUrl(text: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (url === undefined || url.host === '') return maskText(text);
  const userInfo = url.username !== '' || url.password !== '' ? `${MASK}@` : '';
  return `${url.protocol}//${userInfo}${url.host}${url.pathname}${maskQuery(url.search.slice(1))}`;
}

/** `?a=***&b=***`, or '' for no query; the names as written (still percent-encoded). */
function maskQuery(query: string): string {
  if (query === '') return '';
  const items = query.split('&').map((item) => {
    if (item === '') return item;
    const equals = item.indexOf('=');
    return equals < 0 ? MASK : `${item.slice(0, equals)}=${MASK}`;
  });
  return `?${items.join('&')}`;
}

/** The same rules over text no URL parser accepts: cut at `#`, mask before the last `@`, mask the query. */
function maskText(text: string): string {
  const hash = text.indexOf('#');
  const noFragment = hash < 0 ? text : text.slice(0, hash);
  const question = noFragment.indexOf('?');
  const base = question < 0 ? noFragment : noFragment.slice(0, question);
  const query = question < 0 ? '' : maskQuery(noFragment.slice(question + 1)) || '?';
  return `${redactUrl(base)}${query}`;
}
