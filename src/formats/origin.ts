/**
 * `https://host:port` as a callback's URL starts: the unit a pause and a limit apply to. A path, query
 * or trailing text is refused rather than guessed. Returns `undefined` when `text` is not an origin.
 */
export function originOf(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.origin === 'null' || url.origin !== text.replace(/\/$/, '')) return undefined;
  return url.origin;
}
