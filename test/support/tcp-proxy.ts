import { createConnection, createServer, type Socket } from 'node:net';

/** A TCP relay to the broker whose connections a test can cut, as a network failure would. */
export interface TcpProxy {
  /** The broker URL with host and port replaced by the proxy's. */
  url: string;
  /** Destroys every open connection, both sides, at once. New connections are still accepted. */
  cut(): void;
  /** While true, every new connection is closed at once, as by an unreachable broker. */
  refuse(refusing: boolean): void;
  /** Cuts the first connection, open or new, whose client has sent more than `bytes` (a broker that goes away mid-conversation); once. */
  cutOnceAfter(bytes: number): void;
  /** While true, nothing passes either way on any connection (a broker that stops answering, sockets open); held bytes flow on after. */
  stall(stalling: boolean): void;
  close(): Promise<void>;
}

export async function startTcpProxy(brokerUrl: string): Promise<TcpProxy> {
  const target = new URL(brokerUrl);
  const sockets = new Set<Socket>();
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
  };
  let refusing = false;
  let stalled = false;
  let cutAfter: number | undefined;
  const pairs = new Set<[Socket, Socket]>();
  const server = createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = createConnection({ host: target.hostname, port: Number(target.port || 5672) });
    track(client);
    track(upstream);
    let sent = 0;
    client.on('data', (chunk: Buffer) => {
      sent += chunk.length;
      if (cutAfter === undefined || sent <= cutAfter) return;
      cutAfter = undefined;
      client.destroy();
      upstream.destroy();
    });
    client.pipe(upstream);
    upstream.pipe(client);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    if (stalled) for (const socket of pair) socket.pause();
    client.on('close', () => (upstream.destroy(), pairs.delete(pair)));
    upstream.on('close', () => (client.destroy(), pairs.delete(pair)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP address');
  const url = new URL(brokerUrl);
  url.hostname = '127.0.0.1';
  url.port = String(address.port);
  const cut = (): void => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    url: url.toString(),
    cut,
    refuse: (value) => {
      refusing = value;
    },
    cutOnceAfter: (bytes) => {
      cutAfter = bytes;
    },
    stall: (value) => {
      stalled = value;
      // A paused socket reads nothing more, so neither side's bytes reach the other.
      for (const pair of pairs) for (const socket of pair) value ? socket.pause() : socket.resume();
    },
    close: async () => {
      cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
