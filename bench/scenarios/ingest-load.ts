import { connect, type Socket } from 'node:net';

/**
 * A lean HTTP/1.1 load generator for the ingest: `connections` keep-alive sockets, each with at most
 * `pipelining` requests outstanding (1: one request, then its answer, as a client without pipelining
 * does). Requests are written as prepared bytes and answers are read by status line and
 * Content-Length only, so the generator costs a fraction of the server it loads: on a shared
 * 2-core machine a heavier client (undici's request() cost ~80 µs per POST) would make the ratio
 * measure the client, not the ingest.
 */
export interface LoadOptions {
  /** Connection c goes to ports[c % ports.length]: several servers share the connections evenly. */
  ports: number[];
  connections: number;
  pipelining?: number;
  /** Requests to send, numbered 0…count-1. */
  count: number;
  /** The complete bytes of request `i`. */
  request(i: number): Buffer;
  /** Status every answer must have; another one fails the run with its body. */
  expectStatus: number;
}

export interface LoadResult {
  seconds: number;
  /** Send → complete answer, ms, per request. */
  latencies: number[];
  /** CPU of this process during the run, µs per request. */
  cpuUsPerRequest: number;
}

const HEADER_END = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length: *(\d+)/i;

/** The bytes of a POST with a JSON body and the given extra header lines (`Name: value`). */
export function postRequest(host: string, path: string, headerLines: string[], body: string): Buffer {
  const bodyBytes = Buffer.from(body);
  const head = `POST ${path} HTTP/1.1\r\nHost: ${host}\r\n${headerLines.map((line) => `${line}\r\n`).join('')}Content-Type: application/json\r\nContent-Length: ${bodyBytes.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), bodyBytes]);
}

/** Sends every request and resolves once all were answered; rejects on the first unexpected answer. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { count, expectStatus } = options;
  const depth = options.pipelining ?? 1;
  const latencies: number[] = [];
  const sockets: Socket[] = [];
  let next = 0;
  let answered = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  try {
    await new Promise<void>((resolve, reject) => {
      const fail = (error: Error): void => {
        for (const socket of sockets) socket.destroy();
        reject(error);
      };
      const open = (c: number): void => {
        const socket = connect({ port: options.ports[c % options.ports.length] as number, host: '127.0.0.1', noDelay: true });
        sockets.push(socket);
        const sentAt: number[] = [];
        let buffered: Buffer = Buffer.alloc(0);
        const send = (): void => {
          while (sentAt.length < depth && next < count) {
            const request = options.request(next++);
            sentAt.push(performance.now());
            socket.write(request);
          }
        };
        socket.on('connect', send);
        socket.on('error', fail);
        socket.on('close', () => {
          if (answered < count) fail(new Error(`the server closed a connection after ${answered} of ${count} answers`));
        });
        socket.on('data', (chunk: Buffer) => {
          buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
          for (;;) {
            const headEnd = buffered.indexOf(HEADER_END);
            if (headEnd === -1) break;
            const head = buffered.toString('latin1', 0, headEnd);
            const length = Number(CONTENT_LENGTH.exec(head)?.[1] ?? Number.NaN);
            if (!Number.isFinite(length)) return fail(new Error(`an answer without Content-Length: ${head}`));
            const end = headEnd + HEADER_END.length + length;
            if (buffered.length < end) break;
            const status = Number(head.slice(9, 12));
            if (status !== expectStatus)
              return fail(new Error(`answered ${status}: ${buffered.toString('utf8', headEnd + 4, end).slice(0, 300)}`));
            latencies.push(performance.now() - (sentAt.shift() as number));
            buffered = buffered.subarray(end);
            answered += 1;
          }
          if (answered === count) resolve();
          else send();
        });
      };
      for (let c = 0; c < Math.min(options.connections, count); c += 1) open(c);
    });
  } finally {
    for (const socket of sockets) socket.destroy();
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  return { seconds, latencies, cpuUsPerRequest: (cpu.user + cpu.system) / count };
}
