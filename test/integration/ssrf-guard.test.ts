import { describe, it, expect, beforeAll, afterAll, beforeEach } from 'vitest';
import { createServer, type Server } from 'node:http';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import net, { type AddressInfo, type LookupFunction } from 'node:net';
import { request, type Agent } from 'undici';
import { parseCidrList, type AddressPolicy } from '../../src/http/address-policy.js';
import { createGuardedAgent, isForbiddenTargetError } from '../../src/http/guarded-agent.js';

// Real HTTP to a loopback server, no broker. 169.254.169.254 must only ever be refused, never dialled:
// a spy on net.Socket#connect records every address handed to the kernel and, as a safety net should
// the guard ever break, destroys any socket headed for a non-loopback address instead of connecting it.

const isLoopback = (ip: string): boolean => ip === '::1' || ip.startsWith('127.') || ip.startsWith('::ffff:127.');
/** Hosts passed to net.connect (names or literals), and addresses actually dialled. */
const spy = { hosts: [] as string[], dialled: [] as string[], violations: [] as string[] };

function installConnectSpy(): () => void {
  const proto = net.Socket.prototype;
  const original = proto.connect;
  const guard = function (this: net.Socket, ...args: unknown[]): net.Socket {
    const first = args[0];
    // net.connect hands Socket#connect its already-normalized [options, callback] array.
    const options = (Array.isArray(first) ? first[0] : first) as net.TcpNetConnectOpts | undefined;
    if (options !== undefined && typeof options === 'object' && typeof options.host === 'string') {
      const { host } = options;
      spy.hosts.push(host);
      if (net.isIP(host) !== 0) {
        spy.dialled.push(host);
        if (!isLoopback(host)) {
          spy.violations.push(host);
          process.nextTick(() => this.destroy(new Error(`test safety net: refused to dial ${host}`)));
          return this;
        }
      } else {
        const inner: LookupFunction = options.lookup ?? (dnsLookup as LookupFunction);
        options.lookup = (hostname, lookupOptions, callback) =>
          inner(hostname, lookupOptions, (error, result, family) => {
            if (error) return callback(error, result, family);
            const addresses = Array.isArray(result) ? result.map((entry) => entry.address) : [result];
            spy.dialled.push(...addresses);
            const bad = addresses.filter((address) => !isLoopback(address));
            if (bad.length === 0) return callback(null, result, family);
            spy.violations.push(...bad);
            return (callback as (error: Error) => void)(new Error(`test safety net: refused to dial ${bad.join(', ')}`));
          });
      }
    }
    return Reflect.apply(original, this, args) as net.Socket;
  };
  proto.connect = guard as typeof proto.connect;
  return () => {
    proto.connect = original;
  };
}

/** A resolver from a table; `answer` may look at how often it was called. Counts calls per host. */
function resolver(answer: (hostname: string, nth: number) => string | undefined): LookupFunction & { calls: string[] } {
  const calls: string[] = [];
  const lookup = (hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void): void => {
    calls.push(hostname);
    const address = answer(hostname, calls.filter((name) => name === hostname).length);
    if (address === undefined) return void callback(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }));
    const entry: LookupAddress = { address, family: net.isIP(address) };
    process.nextTick(() => (options.all === true ? callback(null, [entry]) : callback(null, entry.address, entry.family)));
  };
  return Object.assign(lookup as unknown as LookupFunction, { calls });
}

const TABLE: Record<string, string> = { 'good.test': '127.0.0.1', 'meta.test': '169.254.169.254' };
const DEFAULT_POLICY: AddressPolicy = { strict: false, allow: [], deny: [] };

let server: Server;
let port = 0;
const seen = { connections: 0, requests: 0 };
let restoreConnect: () => void;
const agents: Agent[] = [];

const agent = (policy: AddressPolicy, lookup: LookupFunction): Agent => {
  const created = createGuardedAgent({ timeoutMs: 2_000, policy, lookup });
  agents.push(created);
  return created;
};

/** Status and body text of a GET, or the error it was rejected with. */
async function get(url: string, dispatcher: Agent, reset = false): Promise<{ status: number; body: string } | { error: unknown }> {
  try {
    const response = await request(url, { dispatcher, reset });
    return { status: response.statusCode, body: await response.body.text() };
  } catch (error) {
    return { error };
  }
}

/** Asserts a refusal by the guard, with `reason` in the message, and no new connection at the server. */
function expectRefused(outcome: Awaited<ReturnType<typeof get>>, reason: string, connectionsBefore: number): void {
  expect('error' in outcome).toBe(true);
  const { error } = outcome as { error: Error };
  expect(isForbiddenTargetError(error)).toBe(true);
  expect(error.message).toContain(reason);
  expect(seen.connections).toBe(connectionsBefore);
}

beforeAll(async () => {
  restoreConnect = installConnectSpy();
  server = createServer((_req, res) => {
    seen.requests += 1;
    res.end('hello');
  });
  server.on('connection', () => (seen.connections += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await Promise.all(agents.map((created) => created.close()));
  await new Promise<void>((resolve) => server.close(() => resolve()));
  restoreConnect();
});

beforeEach(() => {
  // Whatever a test did, no forbidden address may ever have reached the kernel.
  expect(spy.violations).toEqual([]);
});

describe('guarded agent against a real HTTP server', () => {
  it('delivers to a name that resolves to an allowed address', async () => {
    const lookup = resolver((host) => TABLE[host]);
    expect(await get(`http://good.test:${port}/`, agent(DEFAULT_POLICY, lookup))).toEqual({ status: 200, body: 'hello' });
    expect(lookup.calls).toEqual(['good.test']);
    expect(spy.dialled).toContain('127.0.0.1');
  });

  it('refuses a name that resolves to the metadata address, without connecting', async () => {
    const lookup = resolver((host) => TABLE[host]);
    const before = { connections: seen.connections, requests: seen.requests, dialled: spy.dialled.length };
    const outcome = await get(`http://meta.test:${port}/latest/meta-data/`, agent(DEFAULT_POLICY, lookup));
    expectRefused(outcome, '169.254.169.254 is link-local (cloud metadata)', before.connections);
    expect(lookup.calls).toEqual(['meta.test']);
    expect(seen.requests).toBe(before.requests);
    expect(spy.dialled.length).toBe(before.dialled);
  });

  it.each(['http://169.254.169.254/', 'http://[::ffff:169.254.169.254]/', 'http://[fe80::1]:8080/', 'http://0.0.0.0:80/'])(
    'refuses the IP literal %s before any socket exists',
    async (url) => {
      const lookup = resolver((host) => TABLE[host]);
      const before = { connections: seen.connections, hosts: spy.hosts.length };
      expectRefused(await get(url, agent(DEFAULT_POLICY, lookup)), 'is ', before.connections);
      expect(lookup.calls).toEqual([]);
      expect(spy.hosts.length).toBe(before.hosts);
    },
  );

  it('refuses loopback in strict mode, by name and by literal, unless allow-listed', async () => {
    const lookup = resolver((host) => TABLE[host]);
    const strict = agent({ strict: true, allow: [], deny: [] }, lookup);
    const before = seen.connections;
    expectRefused(await get(`http://127.0.0.1:${port}/`, strict), '127.0.0.1 is loopback, refused in strict mode', before);
    expectRefused(await get(`http://good.test:${port}/`, strict), '127.0.0.1 is loopback, refused in strict mode', before);

    const allowed = agent({ strict: true, allow: parseCidrList('127.0.0.1/32', 'TARGET_ALLOW'), deny: [] }, lookup);
    expect(await get(`http://127.0.0.1:${port}/`, allowed)).toEqual({ status: 200, body: 'hello' });
    expect(await get(`http://good.test:${port}/`, allowed)).toEqual({ status: 200, body: 'hello' });
  });

  it('an allow entry that only overlaps a metadata address does not open it, by name or by literal', async () => {
    const lookup = resolver((host) => ({ 'cgnat.test': '100.100.100.200', 'meta.test': '169.254.169.254' })[host]);
    const before = { connections: seen.connections, dialled: spy.dialled.length };
    const wide = agent({ strict: true, allow: parseCidrList('100.64.0.0/10, 0.0.0.0/0', 'TARGET_ALLOW'), deny: [] }, lookup);
    expectRefused(
      await get(`http://cgnat.test:${port}/`, wide),
      '100.100.100.200 is a cloud metadata address, refused even though TARGET_ALLOW covers it',
      before.connections,
    );
    expectRefused(
      await get(`http://meta.test:${port}/latest/meta-data/`, wide),
      '169.254.169.254 is link-local (cloud metadata), refused even though TARGET_ALLOW covers it',
      before.connections,
    );
    expectRefused(await get('http://100.100.100.200/', wide), 'only an entry naming 100.100.100.200/32', before.connections);
    expect(spy.dialled.length).toBe(before.dialled);
  });

  it('refuses a deny-listed address', async () => {
    const denying = agent(
      { strict: false, allow: [], deny: parseCidrList('127.0.0.0/8', 'TARGET_DENY') },
      resolver((host) => TABLE[host]),
    );
    expectRefused(await get(`http://good.test:${port}/`, denying), '127.0.0.1 is in the deny list (127.0.0.0/8)', seen.connections);
  });

  it('checks every new connection, so DNS rebinding is refused on the next connect', async () => {
    // First answer is harmless, every later one points at the metadata service.
    const flipping = resolver((host, nth) => (host === 'rebind.test' ? (nth === 1 ? '127.0.0.1' : '169.254.169.254') : undefined));
    const rebinding = agent(DEFAULT_POLICY, flipping);
    const requestsBefore = seen.requests;
    // `reset` closes the connection after the response, so the next request must connect (and resolve) again.
    expect(await get(`http://rebind.test:${port}/`, rebinding, true)).toEqual({ status: 200, body: 'hello' });
    const connectionsAfterFirst = seen.connections;
    expectRefused(await get(`http://rebind.test:${port}/`, rebinding), '169.254.169.254 is link-local', connectionsAfterFirst);
    expect(flipping.calls).toEqual(['rebind.test', 'rebind.test']);
    expect(seen.requests).toBe(requestsBefore + 1);
  });

  it('never handed a forbidden address to net.connect', () => {
    expect(spy.violations).toEqual([]);
    expect(spy.dialled.length).toBeGreaterThan(0);
    expect(spy.dialled.every(isLoopback)).toBe(true);
  });
});
