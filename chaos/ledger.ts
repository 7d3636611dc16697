import { createServer, type Server, type ServerResponse } from 'node:http';
import { answerFor, FATES, fateOfId, type Fate } from './fates.js';

/** One HTTP request the receiver got for a callback. */
export interface Attempt {
  /** The `x-callback-attempt` header (NaN when absent or unreadable: a contract violation). */
  attempt: number;
  /** Status the script chose, or 0 for a request left hanging until the worker gave up. */
  status: number;
  /** The answer was written out; false when the worker's socket was gone first (it was killed or gave up). */
  answered: boolean;
  at: number;
}

export interface Ledger {
  /** Every attempt, by `webhook-id`. */
  byId: Map<string, Attempt[]>;
  /** Requests whose `webhook-id` is missing or names no fate (answered 400). */
  strays: number;
  /** ms since epoch of the last request (quiescence needs a quiet receiver too). */
  lastRequestAt: number;
  /** Requests being held open right now. */
  readonly hanging: number;
  /** The callback URL for callback number `n` with fate `fate`. */
  urlFor(fate: Fate, n: number): string;
  close(): Promise<void>;
}

/**
 * Healthy callbacks spread over this many origins: target isolation judges health per origin, so a
 * single shared origin would let the failing fates degrade the healthy ones too.
 */
const OK_SHARDS = 3;

/**
 * The ledger receiver: real `node:http` servers on 127.0.0.1 port 0, one origin per failing fate and
 * a few for healthy callbacks. Every request is recorded by `webhook-id` when it arrives, so the ledger
 * also sees attempts whose worker was killed before the answer went out (`answered: false`).
 */
export async function startLedger(): Promise<Ledger> {
  const byId = new Map<string, Attempt[]>();
  const hanging = new Set<ServerResponse>();
  const servers: Server[] = [];
  const origins = new Map<string, string[]>();
  const ledger = {
    byId,
    strays: 0,
    lastRequestAt: 0,
    get hanging() {
      return hanging.size;
    },
    urlFor(fate: Fate, n: number): string {
      const list = origins.get(fate) ?? [];
      return `${list[n % list.length]}/callbacks/${fate}`;
    },
    async close() {
      for (const res of hanging) res.destroy();
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              server.closeAllConnections();
              server.close(() => resolve());
            }),
        ),
      );
    },
  };
  for (const fate of Object.keys(FATES) as Fate[]) {
    const list: string[] = [];
    for (let shard = 0; shard < (fate === 'ok' ? OK_SHARDS : 1); shard += 1) {
      const server = createServer((req, res) => {
        // The body is not needed (the id travels in a header) but must be consumed to keep the socket reusable.
        req.resume();
        req.on('end', () => {
          ledger.lastRequestAt = Date.now();
          const id = String(req.headers['webhook-id'] ?? '');
          const fateOfRequest = fateOfId(id);
          if (!fateOfRequest) {
            ledger.strays += 1;
            res.writeHead(400).end();
            return;
          }
          const attempt = Number(req.headers['x-callback-attempt']);
          const answer = answerFor(fateOfRequest, attempt);
          const record: Attempt = { attempt, status: answer === 'hang' ? 0 : answer.status, answered: false, at: Date.now() };
          const attempts = byId.get(id);
          if (attempts) attempts.push(record);
          else byId.set(id, [record]);
          if (answer === 'hang') {
            // Held until the worker's HTTP_TIMEOUT aborts the request (or the worker dies).
            hanging.add(res);
            res.on('close', () => hanging.delete(res));
            return;
          }
          res.on('finish', () => (record.answered = true));
          // A worker that dies meanwhile never gets this answer: the relay must then deliver again.
          setTimeout(() => {
            if (!res.destroyed) res.writeHead(answer.status, { 'content-type': 'text/plain' }).end('ok');
          }, answer.delayMs);
        });
      });
      // Longer than undici's default keep-alive, so the pool never reuses a socket the server just closed.
      server.keepAliveTimeout = 10_000;
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      servers.push(server);
      list.push(`http://127.0.0.1:${(server.address() as { port: number }).port}`);
    }
    origins.set(fate, list);
  }
  return ledger;
}
