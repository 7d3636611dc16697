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
  /**
   * Where the request's arrival falls in the receiver's own order of events (ledger.tick()): ordered
   * keys are judged on it, since two events within one millisecond are still in a known order.
   */
  tick: number;
  /**
   * The tick at which the answer was handed to the socket (`end()` called: the worker cannot have read
   * it before), or, for a request left hanging, at which its socket closed (the worker gave up or died).
   * Absent while neither happened.
   */
  endTick?: number;
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
  /** The next number of the receiver's order of events (arrivals, answers, closes, and whatever else takes one, e.g. a cancel sent). */
  tick(): number;
  /** The callback URL for callback number `n` with fate `fate`; `path` is appended (an ordered callback's key and sequence number). */
  urlFor(fate: Fate, n: number, path?: string): string;
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
  let ticks = 0;
  const ledger = {
    byId,
    strays: 0,
    lastRequestAt: 0,
    get hanging() {
      return hanging.size;
    },
    tick(): number {
      ticks += 1;
      return ticks;
    },
    urlFor(fate: Fate, n: number, path = ''): string {
      const list = origins.get(fate) ?? [];
      return `${list[n % list.length]}/callbacks/${fate}${path}`;
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
          const record: Attempt = {
            attempt,
            status: answer === 'hang' ? 0 : answer.status,
            answered: false,
            at: Date.now(),
            tick: ledger.tick(),
          };
          const attempts = byId.get(id);
          if (attempts) attempts.push(record);
          else byId.set(id, [record]);
          if (answer === 'hang') {
            // Held until the worker's HTTP_TIMEOUT aborts the request (or the worker dies).
            hanging.add(res);
            res.on('close', () => {
              hanging.delete(res);
              record.endTick = ledger.tick();
            });
            return;
          }
          res.on('finish', () => (record.answered = true));
          // A worker that dies meanwhile never gets this answer: the relay must then deliver again.
          setTimeout(() => {
            if (res.destroyed) return;
            record.endTick = ledger.tick();
            res.writeHead(answer.status, { 'content-type': 'text/plain' }).end('ok');
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
