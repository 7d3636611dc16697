/** Any origin will do: only whether the result stays on it matters. */
const BASE = 'http://console.invalid';

/**
 * Where a login may send the browser: a path of the console itself, else `/`. The value is read as
 * a browser reads a Location header (the WHATWG URL parser drops tabs and newlines and takes `\` for
 * `/`), so `/%09/evil.example/`, `/\evil` or `//evil` cannot name another host; what comes back is
 * the parsed path, query and fragment only. Pure.
 */
export function safeNext(next: string | undefined | null): string {
  if (typeof next !== 'string' || !next.startsWith('/')) return '/';
  let url: URL;
  try {
    url = new URL(next, BASE);
  } catch {
    return '/';
  }
  if (url.origin !== BASE) return '/';
  const path = `${url.pathname}${url.search}${url.hash}`;
  // `/.//evil` parses to the path `//evil`, which a browser would read as another host.
  return path.startsWith('/') && !path.startsWith('//') && !path.startsWith('/\\') ? path : '/';
}
