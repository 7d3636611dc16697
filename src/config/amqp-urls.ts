/**
 * The broker URLs of AMQP_URL: one, or several separated by commas (the nodes of a cluster). The
 * connection manager tries them in turn, so a worker fails over when its node goes down.
 */
export function amqpUrls(text: string): string[] {
  return text
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '');
}
