import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import net from 'node:net';
import { HEADER } from '../../src/message/headers.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';

// The compose case: TARGET_ALLOW lists a whole range without ports (as docker-compose.yml did with
// 172.16.0.0/12), and the broker lives in it. A callback aimed at the broker's management API or AMQP
// listener must be parked as forbidden-target without a connection ever being opened to it.

const open = openedInEachTest();
/**
 * Every address:port net.Socket#connect dials in this process (the worker runs in-process): IP
 * literals as given, names as their lookup (the guard's) answered.
 */
const dialled: string[] = [];
let restore: () => void;

beforeAll(() => {
  const proto = net.Socket.prototype;
  const original = proto.connect;
  proto.connect = function (this: net.Socket, ...args: unknown[]): net.Socket {
    const first = args[0];
    const options = (Array.isArray(first) ? first[0] : first) as net.TcpNetConnectOpts | undefined;
    if (options !== undefined && typeof options === 'object' && typeof options.host === 'string') {
      const { host, port, lookup } = options;
      if (net.isIP(host) !== 0 || lookup === undefined) dialled.push(`${host}:${port}`);
      else
        options.lookup = (hostname, lookupOptions, callback) =>
          lookup(hostname, lookupOptions, (error, result, family) => {
            if (!error)
              dialled.push(
                ...(Array.isArray(result) ? result.map((entry) => entry.address) : [result]).map((address) => `${address}:${port}`),
              );
            callback(error, result, family);
          });
    }
    return Reflect.apply(original, this, args) as net.Socket;
  } as typeof proto.connect;
  restore = () => {
    proto.connect = original;
  };
});

afterAll(() => restore());

describe('the broker the worker is connected to is never a callback target', () => {
  it('TARGET_ALLOW=127.0.0.0/8 without ports: callbacks to the broker management and AMQP ports are parked, never dialled', async () => {
    const receiver = await open.receiver(() => ({ status: 204 }));
    const relay = await open.relay({ TARGET_ALLOW: '127.0.0.0/8' });
    const amqpPort = new URL(relay.config.amqpUrl).port;
    await relay.startWorker();
    const targets = [`http://127.0.0.1:15672/api/users/intruder`, `http://127.0.0.1:${amqpPort}/`, `http://localhost:15692/metrics`];
    for (const url of targets)
      await relay.publisher.publish({
        url,
        method: 'PUT',
        headers: { authorization: 'Basic Z3Vlc3Q6Z3Vlc3Q=' },
        body: { password: 'x', tags: 'administrator' },
      });
    await relay.publisher.publish({ url: `${receiver.origin}/fine`, body: 1 });
    await relay.waitForDead(targets.length);
    const dead = await relay.drainDead();
    expect(dead.map((message) => message.properties.headers?.[HEADER.reason])).toEqual(targets.map(() => 'forbidden-target'));
    for (const message of dead) {
      expect(message.properties.headers?.[HEADER.attempts]).toBe(1);
      expect(String(message.properties.headers?.[HEADER.lastError])).toMatch(/^CR_ERR_FORBIDDEN_TARGET: .*is the relay's own broker/);
    }
    await receiver.waitFor((requests) => requests.length === 1);
    const refused = dialled.filter((pair) => /:(15672|15692)$/.test(pair));
    expect(refused).toEqual([]);
    // The worker's own AMQP connections dial the broker by its URL's host; no callback did.
    expect(dialled.filter((pair) => pair.endsWith(`:${amqpPort}`)).every((pair) => pair === `127.0.0.1:${amqpPort}`)).toBe(true);
    expect(receiver.requests).toHaveLength(1);
  });

  it('a ported entry 127.0.0.0/8:<port> allows only that port', async () => {
    const allowed = await open.receiver(() => ({ status: 204 }));
    const other = await open.receiver(() => ({ status: 204 }));
    const relay = await open.relay({ TARGET_ALLOW: `127.0.0.0/8:${new URL(allowed.origin).port}` });
    await relay.startWorker();
    await relay.publisher.publish({ url: `${other.origin}/other`, body: 1 });
    await relay.publisher.publish({ url: `${allowed.origin}/allowed`, body: 2 });
    await relay.waitForDead(1);
    const [dead] = await relay.drainDead();
    expect(dead?.properties.headers?.[HEADER.reason]).toBe('forbidden-target');
    expect(String(dead?.properties.headers?.[HEADER.lastError])).toMatch(/^CR_ERR_FORBIDDEN_TARGET: .*loopback, refused in strict mode/);
    await allowed.waitFor((requests) => requests.length === 1);
    expect(other.requests).toHaveLength(0);
  });
});
