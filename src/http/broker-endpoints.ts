import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { amqpUrls } from '../config/amqp-urls.js';
import { parseCidr, type Cidr } from '../formats/cidr.js';

/**
 * RabbitMQ's listener ports a callback must never reach, whatever TARGET_ALLOW says: AMQP (5672, TLS
 * 5671), management HTTP API (15672, TLS 15671) and Prometheus (15692, TLS 15691). A callback chooses
 * method, headers and body, so one aimed at the management API could create an administrator.
 * https://www.rabbitmq.com/docs/networking#ports
 */
export const BROKER_PORTS: readonly number[] = [5672, 5671, 15672, 15671, 15692, 15691];

// The worker's own loopback reaches a broker on the same host (or in the same network namespace) on
// any 127.x address, so loopback is refused on the broker's ports even when AMQP_URL names another address.
const LOOPBACK = ['127.0.0.0/8', '::1/128'];

/** One AMQP_URL entry: the host as written (brackets stripped) and the AMQP port it names. */
export interface BrokerHost {
  host: string;
  port: number;
}

/** The hosts and AMQP ports of AMQP_URL (one URL, or several separated by commas). */
export function brokerHosts(amqpUrl: string): BrokerHost[] {
  return amqpUrls(amqpUrl).flatMap((text) => {
    try {
      const url = new URL(text);
      const port = Number(url.port) || (url.protocol === 'amqps:' ? 5671 : 5672);
      return [{ host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port }];
    } catch {
      // A URL the connection manager cannot use either: no broker to protect there.
      return [];
    }
  });
}

/**
 * The refused endpoints (pure): every address of the broker and loopback, each on the broker ports
 * and on every AMQP port AMQP_URL names.
 */
export function brokerEndpoints(hosts: readonly BrokerHost[], addresses: readonly string[]): Cidr[] {
  const ports = [...new Set([...BROKER_PORTS, ...hosts.map((host) => host.port)])].join(',');
  // A zone id (fe80::1%eth0) names an interface, not another address.
  const hostBlocks = addresses
    .map((address) => address.split('%')[0] ?? address)
    .map((address) => `${address}/${isIP(address) === 4 ? 32 : 128}`);
  const blocks = [...new Set([...LOOPBACK, ...hostBlocks])];
  return blocks.map((block) => parseCidr(`${block}:${ports}`, 'AMQP_URL'));
}

/**
 * Resolves AMQP_URL's hosts (every address, as a callback's lookup would) and returns the endpoints
 * the worker refuses to dial, with the hosts that did not resolve (their other nodes are still covered).
 */
export async function resolveBrokerEndpoints(
  amqpUrl: string,
  resolve: typeof lookup = lookup,
): Promise<{ endpoints: Cidr[]; unresolved: string[] }> {
  const hosts = brokerHosts(amqpUrl);
  const addresses: string[] = [];
  const unresolved: string[] = [];
  for (const { host } of hosts) {
    if (isIP(host) !== 0) addresses.push(host);
    else
      await resolve(host, { all: true }).then(
        (found) => addresses.push(...found.map((entry) => entry.address)),
        () => unresolved.push(host),
      );
  }
  return { endpoints: brokerEndpoints(hosts, addresses), unresolved };
}
