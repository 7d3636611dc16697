import { createServer, type Socket } from 'node:net';
import { listenOnLoopback } from './free-port.js';

/** One request head as a raw TCP receiver read it, and what became of its connection. */
export interface RawRequest {
  method: string;
  path: string;
  /** The request head, as received (request line and headers). */
  head: string;
  socket: Socket;
  /** ms since epoch when the head was complete. */
  at: number;
  /** ms since epoch when the connection closed (either side), once it has. */
  closedAt: number | undefined;
  /** Bytes this receiver wrote on the connection (through `write` below). */
  written: number;
  /** Writes and counts, unless the connection is gone. */
  write(data: string | Buffer): boolean;
}

export interface RawReceiver {
  /** `http://127.0.0.1:PORT` */
  origin: string;
  requests: RawRequest[];
  to(path: string): RawRequest[];
  /** TCP connections accepted so far (even those that never sent a complete head). */
  readonly connections: number;
  waitFor(predicate: (requests: RawRequest[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A receiver on `node:net` (127.0.0.1, port 0) that can misbehave in ways `node:http` will not: `answer`
 * gets each connection's first request head and the socket, and may write anything (or nothing) to it.
 * The request body is left unread; every answer should close or end the connection.
 */
export async function startRawReceiver(answer: (request: RawRequest) => void): Promise<RawReceiver> {
  const requests: RawRequest[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('error', () => {}); // resets are expected here
    let buffered = '';
    let request: RawRequest | undefined;
    socket.on('close', () => {
      sockets.delete(socket);
      if (request) request.closedAt = Date.now();
    });
    socket.on('data', (chunk: Buffer) => {
      if (request) return;
      buffered += chunk.toString('latin1');
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buffered.slice(0, end);
      const [method = '', path = ''] = head.split('\r\n')[0]?.split(' ') ?? [];
      const current: RawRequest = {
        method,
        path,
        head,
        socket,
        at: Date.now(),
        closedAt: undefined,
        written: 0,
        write(data) {
          if (socket.destroyed || socket.writableEnded) return false;
          current.written += Buffer.byteLength(data);
          return socket.write(data);
        },
      };
      request = current;
      requests.push(current);
      answer(current);
    });
  });
  const origin = await listenOnLoopback(server);
  return {
    origin,
    requests,
    to: (path) => requests.filter((r) => r.path === path),
    get connections() {
      return connections;
    },
    async waitFor(predicate, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(requests)) {
        if (Date.now() > deadline) throw new Error(`raw receiver: condition not met within ${timeoutMs} ms (${requests.length} requests)`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A status line and headers, ending the head (`connection: close` so the client never reuses the socket). */
export const responseHead = (status: string, headers: Record<string, string | number> = {}): string =>
  `HTTP/1.1 ${status}\r\n${Object.entries({ ...headers, connection: 'close' })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;
