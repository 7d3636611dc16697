/** The URL with any password replaced by `***`, safe to log. Unparseable input is fully masked. */
export function redactUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return text.includes('@') ? '***' : text;
  }
}
