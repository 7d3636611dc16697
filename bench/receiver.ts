import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** `ok`: 200 at once. `fail-once`: the first request of each callback gets 500, later ones 200. */
export type ReceiverMode = 'ok' | 'fail-once';

/** The callback body every scenario publishes: the publish time, a sequence number and some padding (~330 bytes on the wire). */
export const benchBody = (i: number): { sentAt: number; i: number; event: string; pad: string } => ({
  sentAt: Date.now(),
  i,
  event: 'order.paid',
  pad: 'x'.repeat(200),
});

export interface ReceivedRequest {
  path: string;
  at: number;
  i: number;
  ok: boolean;
}

export interface BenchReceiver {
  origins: string[];
  /** The URL of callback `i`, spread round-robin over the first `targets` origins (one origin = one target). */
  urlFor(i: number, targets?: number): string;
  /** Distinct callbacks answered with 200. */
  readonly delivered: number;
  /** publish → delivered, ms, per delivered callback. */
  readonly latencies: number[];
  /** The publish time (sentAt) of each delivered callback, in the order of `latencies`. */
  readonly sentAts: number[];
  readonly firstAt: number;
  readonly lastAt: number;
  /** Arrival times (ms) of every request, per callback `i` (fail-once mode only). */
  readonly attempts: Map<number, number[]>;
  /** Every request in arrival order: its path, when it arrived (ms), its callback's `i` and whether it was answered 200. */
  readonly requests: ReceivedRequest[];
  /** Resolves true once `count` callbacks are delivered, false after `timeoutMs`. */
  waitForDelivered(count: number, timeoutMs: number): Promise<boolean>;
  reset(mode?: ReceiverMode): void;
  close(): Promise<void>;
}

/** One `node:http` handler listening on `ports` loopback ports (so a run can have several targets). */
export async function startReceiver(ports = 1, initialMode: ReceiverMode = 'ok'): Promise<BenchReceiver> {
  let mode = initialMode;
  let seen = new Set<number>();
  let latencies: number[] = [];
  let sentAts: number[] = [];
  let attempts = new Map<number, number[]>();
  let requests: ReceivedRequest[] = [];
  let firstAt = 0;
  let lastAt = 0;
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const now = Date.now();
      let body: { sentAt: number; i: number };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
      } catch {
        res.writeHead(400).end();
        return;
      }
      let status = 200;
      if (mode === 'fail-once') {
        const times = attempts.get(body.i) ?? [];
        times.push(now);
        attempts.set(body.i, times);
        if (times.length === 1) status = 500;
      }
      if (status === 200 && !seen.has(body.i)) {
        seen.add(body.i);
        latencies.push(now - body.sentAt);
        sentAts.push(body.sentAt);
        if (firstAt === 0) firstAt = now;
        lastAt = now;
      }
      requests.push({ path: req.url ?? '', at: now, i: body.i, ok: status === 200 });
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'fail');
    });
  };
  const servers: Server[] = [];
  for (let i = 0; i < ports; i += 1) {
    const server = createServer(handler);
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
  }
  const origins = servers.map((server) => `http://127.0.0.1:${(server.address() as { port: number }).port}`);
  return {
    origins,
    urlFor: (i, targets = origins.length) => `${origins[i % Math.min(targets, origins.length)]}/hooks/${i}`,
    get delivered() {
      return seen.size;
    },
    get latencies() {
      return latencies;
    },
    get sentAts() {
      return sentAts;
    },
    get firstAt() {
      return firstAt;
    },
    get lastAt() {
      return lastAt;
    },
    get attempts() {
      return attempts;
    },
    get requests() {
      return requests;
    },
    async waitForDelivered(count, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (seen.size < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      return seen.size >= count;
    },
    reset(next = mode) {
      mode = next;
      seen = new Set();
      latencies = [];
      sentAts = [];
      attempts = new Map();
      requests = [];
      firstAt = 0;
      lastAt = 0;
    },
    close: async () => {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
}
