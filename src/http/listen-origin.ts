/**
 * Where a listener that bound `address` is reached from this machine. A wildcard address (every
 * interface) answers on loopback too, so its origin names loopback; an IPv6 address is bracketed.
 */
export function listenOrigin(address: string, port: number): string {
  const host = address === '0.0.0.0' ? '127.0.0.1' : address === '::' ? '[::1]' : address.includes(':') ? `[${address}]` : address;
  return `http://${host}:${port}`;
}
