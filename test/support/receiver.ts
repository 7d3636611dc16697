import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { listenOnLoopback } from './free-port.js';

export interface ReceivedRequest {
  path: string;
  method: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** ms since epoch when the request arrived. */
  at: number;
  /** 1-based count of requests to this path so far, this one included. */
  nth: number;
}

/**
 * How the receiver answers one request: a status (after `delayMs`, and not before `after` settles: a
 * test holds the answer until the broker is in the state it needs), or `hang` until closed.
 */
export type Answer =
  { status: number; body?: string; headers?: Record<string, string>; delayMs?: number; after?: Promise<unknown> } | 'hang';

export interface Receiver {
  /** `http://127.0.0.1:PORT` */
  origin: string;
  requests: ReceivedRequest[];
  /** Requests to `path` so far. */
  to(path: string): ReceivedRequest[];
  /** Resolves once `predicate` holds over the requests (polled), or rejects after `timeoutMs`. */
  waitFor(predicate: (requests: ReceivedRequest[]) => boolean, timeoutMs?: number): Promise<void>;
  /** Requests left hanging right now. */
  readonly hangingNow: number;
  close(): Promise<void>;
}

/** A real `node:http` receiver on port 0 whose `script` answers each request (it may depend on `nth`). */
export async function startReceiver(script: (request: ReceivedRequest) => Answer): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      const received: ReceivedRequest = {
        path,
        method: req.method ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
        nth: requests.filter((r) => r.path === path).length + 1,
      };
      requests.push(received);
      const answer = script(received);
      if (answer === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      const reply = (): void =>
        void setTimeout(() => res.writeHead(answer.status, answer.headers).end(answer.body ?? ''), answer.delayMs ?? 0);
      if (answer.after) void answer.after.then(reply, reply);
      else reply();
    });
  });
  const origin = await listenOnLoopback(server);
  return {
    origin,
    requests,
    to: (path) => requests.filter((r) => r.path === path),
    get hangingNow() {
      return hanging.size;
    },
    async waitFor(predicate, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(requests)) {
        if (Date.now() > deadline) throw new Error(`receiver: condition not met within ${timeoutMs} ms (${requests.length} requests)`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
