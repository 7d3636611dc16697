import { describe, expect, it } from 'vitest';
import type { lookup } from 'node:dns/promises';
import { checkAddress, parseCidrList } from '../../../src/http/address-policy.js';
import { brokerEndpoints, brokerHosts, resolveBrokerEndpoints } from '../../../src/http/broker-endpoints.js';

const PORTS = '5672,5671,15672,15671,15692,15691';

/** A resolver from a table, as dns.promises.lookup with `all: true` answers. */
const table = (answers: Record<string, string[]>): typeof lookup =>
  (async (host: string) => {
    const found = answers[host];
    if (found === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  }) as unknown as typeof lookup;

describe('broker endpoints', () => {
  it('reads the hosts and AMQP ports of every AMQP_URL entry', () => {
    expect(brokerHosts('amqp://u:p@rabbitmq, amqps://[fd00::5]:5999/vhost,amqp://127.0.0.1:41234')).toEqual([
      { host: 'rabbitmq', port: 5672 },
      { host: 'fd00::5', port: 5999 },
      { host: '127.0.0.1', port: 41234 },
    ]);
  });

  it('covers every broker address and loopback, on the standard ports and each URL port', () => {
    const endpoints = brokerEndpoints([{ host: 'rabbitmq', port: 5673 }], ['172.18.0.2', 'fd00::2']);
    expect(endpoints.map((cidr) => cidr.text)).toEqual([
      `127.0.0.0/8:${PORTS},5673`,
      `::1/128:${PORTS},5673`,
      `172.18.0.2/32:${PORTS},5673`,
      `fd00::2/128:${PORTS},5673`,
    ]);
  });

  it('resolves names, keeps IP literals, and names the hosts that did not resolve', async () => {
    const { endpoints, unresolved } = await resolveBrokerEndpoints(
      'amqp://rabbitmq,amqp://gone,amqp://10.0.0.9:6000',
      table({ rabbitmq: ['172.18.0.2'] }),
    );
    expect(unresolved).toEqual(['gone']);
    const policy = { strict: false, allow: parseCidrList('0.0.0.0/0', 'TARGET_ALLOW'), deny: [], broker: endpoints };
    expect(checkAddress('172.18.0.2', policy, 15672)).toMatchObject({ allowed: false });
    expect(checkAddress('10.0.0.9', policy, 6000)).toMatchObject({ allowed: false });
    expect(checkAddress('127.0.0.2', policy, 15692)).toMatchObject({ allowed: false });
    expect(checkAddress('172.18.0.2', policy, 8080)).toEqual({ allowed: true });
  });
});
