import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HEADER } from '../../src/message/headers.js';
import { sleep } from '../support/modes.js';
import { responseHead, startRawReceiver, type RawReceiver, type RawRequest } from '../support/raw-receiver.js';
import { openedInEachTest } from '../support/opened-in-each-test.js';
import { startRelay, type RelayFixture } from '../support/relay.js';
import { mulberry32, randomInt } from '../support/prng.js';

/** A short schedule: two attempts 200 ms apart, one second per attempt. */
const ENV = { DELAY_MODE: 'queues', RETRY_SCHEDULE: '200ms', MAX_ATTEMPTS: '2', HTTP_TIMEOUT: '1s' };
const TIMEOUT = /^TIMEOUT: no complete answer within 1000ms$/;
/** undici's parser errors carry no code, so describeError() falls back to the error's name. */
const PARSE_ERROR = /^HTTPParserError: Response does not match the HTTP\/1\.1 protocol \(.+\)$/;

type Expected = 'delivered' | { reason: 'exhausted' | 'rejected'; attempts: number; status?: number; error: RegExp };

interface Case {
  name: string;
  /** Answers one request (each attempt opens a new connection: every answer closes it). */
  answer: (request: RawRequest, origin: string) => void;
  expected: Expected;
  /** Further checks on what the receiver saw. */
  check?: (receiver: RawReceiver) => void;
}

const end = (request: RawRequest, data: string | Buffer = ''): void => {
  request.write(data);
  request.socket.end();
};
const cutAfter = (request: RawRequest, head: string, partial: string, cut: (socket: Socket) => void): void => {
  request.write(head + partial);
  setTimeout(() => cut(request.socket), 50);
};
/** The client, not the receiver, closed each connection, about HTTP_TIMEOUT after the request. */
const clientHungUpAfterTimeout = (receiver: RawReceiver): void => {
  for (const request of receiver.requests) {
    expect(request.closedAt).toBeDefined();
    expect((request.closedAt ?? 0) - request.at).toBeGreaterThanOrEqual(900);
    expect((request.closedAt ?? 0) - request.at).toBeLessThan(2_500);
  }
};
const noise = mulberry32(0xbad_b17e);
const binaryNoise = Buffer.from([0x00, 0xff, ...Array.from({ length: 512 }, () => randomInt(noise, 0, 255))]);
const redirect = (status: string, location: (origin: string) => string): Case => ({
  name: `${status} redirect to another path of the same receiver`,
  answer: (request, origin) =>
    request.path === '/target'
      ? end(request, responseHead('200 OK', { 'content-length': 0 }))
      : end(request, responseHead(status, { location: location(origin), 'content-length': 0 })),
  expected: { reason: 'rejected', attempts: 1, status: Number(status.slice(0, 3)), error: new RegExp(`^HTTP ${status.slice(0, 3)}$`) },
  check: (receiver) => expect(receiver.to('/target')).toHaveLength(0),
});

const CASES: Case[] = [
  {
    name: 'slow drip: headers, then one byte per 200 ms past HTTP_TIMEOUT',
    answer: (request) => {
      request.write(responseHead('200 OK', { 'content-length': 100 }));
      const drip = setInterval(() => (request.socket.destroyed ? clearInterval(drip) : request.write('x')), 200);
      request.socket.on('close', () => clearInterval(drip));
    },
    expected: { reason: 'exhausted', attempts: 2, error: TIMEOUT },
    check: (receiver) => {
      clientHungUpAfterTimeout(receiver);
      for (const request of receiver.requests)
        expect(request.written - responseHead('200 OK', { 'content-length': 100 }).length).toBeLessThan(100);
    },
  },
  {
    name: 'accepts the connection and never answers',
    answer: () => {},
    expected: { reason: 'exhausted', attempts: 2, error: TIMEOUT },
    check: clientHungUpAfterTimeout,
  },
  {
    name: 'connection closed after 100 of 1000 body bytes',
    answer: (request) =>
      cutAfter(request, responseHead('200 OK', { 'content-length': 1_000 }), 'x'.repeat(100), (socket) => socket.destroy()),
    expected: { reason: 'exhausted', attempts: 2, error: /^UND_ERR_RES_CONTENT_LENGTH_MISMATCH: / },
  },
  {
    name: 'connection reset (RST) after 100 of 1000 body bytes',
    answer: (request) =>
      cutAfter(request, responseHead('200 OK', { 'content-length': 1_000 }), 'x'.repeat(100), (socket) => socket.resetAndDestroy()),
    expected: { reason: 'exhausted', attempts: 2, error: /^(UND_ERR_RES_CONTENT_LENGTH_MISMATCH|UND_ERR_SOCKET|ECONNRESET): / },
  },
  {
    name: 'chunked body cut inside a chunk',
    answer: (request) =>
      cutAfter(request, responseHead('200 OK', { 'transfer-encoding': 'chunked' }), `3e8\r\n${'x'.repeat(100)}`, (socket) =>
        socket.destroy(),
      ),
    expected: { reason: 'exhausted', attempts: 2, error: /^HTTPParserError: .*Invalid EOF state/ },
  },
  {
    name: 'connection closed without any answer',
    answer: (request) => end(request),
    expected: { reason: 'exhausted', attempts: 2, error: /^UND_ERR_SOCKET: / },
  },
  {
    name: 'garbage instead of a status line',
    answer: (request) => request.write('SSH-2.0-OpenSSH_9.6\r\n'),
    expected: { reason: 'exhausted', attempts: 2, error: PARSE_ERROR },
  },
  {
    name: 'binary noise instead of a response',
    answer: (request) => request.write(binaryNoise),
    expected: { reason: 'exhausted', attempts: 2, error: PARSE_ERROR },
  },
  {
    name: 'non-numeric status code',
    answer: (request) => request.write('HTTP/1.1 2x0 OK\r\n\r\n'),
    expected: { reason: 'exhausted', attempts: 2, error: PARSE_ERROR },
  },
  {
    name: 'header line without a colon',
    answer: (request) => request.write('HTTP/1.1 200 OK\r\nnot a header\r\n\r\n'),
    expected: { reason: 'exhausted', attempts: 2, error: PARSE_ERROR },
  },
  {
    name: '64 KiB of response headers',
    answer: (request) => end(request, responseHead('200 OK', { 'x-big': 'a'.repeat(65_536), 'content-length': 0 })),
    expected: { reason: 'exhausted', attempts: 2, error: /^UND_ERR_HEADERS_OVERFLOW: / },
  },
  redirect('301 Moved Permanently', () => '/target'),
  redirect('302 Found', (origin) => `${origin}/target`),
  redirect('303 See Other', () => '/target'),
  redirect('307 Temporary Redirect', (origin) => `${origin}/target`),
  redirect('308 Permanent Redirect', () => '/target'),
  { name: '204 without a body', answer: (request) => end(request, responseHead('204 No Content')), expected: 'delivered' },
  {
    name: '200 with content-length 0',
    answer: (request) => end(request, responseHead('200 OK', { 'content-length': 0 })),
    expected: 'delivered',
  },
  {
    name: '103 Early Hints, then 204',
    answer: (request) => end(request, `HTTP/1.1 103 Early Hints\r\nlink: </x.css>\r\n\r\n${responseHead('204 No Content')}`),
    expected: 'delivered',
  },
  {
    name: '200 with a body delimited by the connection close',
    answer: (request) => end(request, `HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nok`),
    expected: 'delivered',
  },
];

describe('misbehaving receivers (queues mode; RETRY_SCHEDULE 200ms, MAX_ATTEMPTS 2, HTTP_TIMEOUT 1s)', () => {
  let relay: RelayFixture;
  const receivers = new Map<string, RawReceiver>();
  const dead = new Map<string, Record<string, unknown>>();
  let startedAt = 0;
  let settledAt = 0;

  // One receiver (one origin) per case, so target isolation never couples the cases; all run at once.
  beforeAll(async () => {
    relay = await startRelay(ENV);
    for (const c of CASES) {
      const receiver: RawReceiver = await startRawReceiver((request) => c.answer(request, receiver.origin));
      receivers.set(c.name, receiver);
    }
    await relay.startWorker();
    startedAt = Date.now();
    for (const c of CASES)
      await relay.publisher.publish({
        id: c.name.replace(/[^\x21-\x7e]+/g, '-'),
        url: `${receivers.get(c.name)?.origin}/hook`,
        body: { case: c.name },
      });
    const deadCount = CASES.filter((c) => c.expected !== 'delivered').length;
    await relay.waitForDead(deadCount, 20_000);
    settledAt = Date.now();
    for (const message of await relay.drainDead())
      dead.set(JSON.parse(message.content.toString()).body.case, message.properties.headers ?? {});
    await sleep(500); // late duplicates, if any, would show up now
  });
  afterAll(async () => {
    await relay?.cleanup();
    await Promise.all([...receivers.values()].map((receiver) => receiver.close()));
  });

  it.each(
    CASES.map((c) => ({ ...c, label: typeof c.expected === 'string' ? 'success' : `${c.expected.reason}, ${c.expected.error.source}` })),
  )('$name → $label', ({ name, expected, check }) => {
    const receiver = receivers.get(name) as RawReceiver;
    const hooks = receiver.to('/hook');
    if (expected === 'delivered') {
      expect(dead.has(name)).toBe(false);
      expect(hooks).toHaveLength(1);
    } else {
      const headers = dead.get(name);
      expect(headers, `no P.dead message for "${name}"`).toBeDefined();
      expect(headers?.[HEADER.reason]).toBe(expected.reason);
      expect(headers?.[HEADER.attempts]).toBe(expected.attempts);
      expect(headers?.[HEADER.lastStatus]).toBe(expected.status);
      expect(String(headers?.[HEADER.lastError])).toMatch(expected.error);
      expect(hooks).toHaveLength(expected.attempts);
      expect(hooks.map((r) => /x-callback-attempt: (\d+)/i.exec(r.head)?.[1])).toEqual(
        Array.from({ length: expected.attempts }, (_, i) => String(i + 1)),
      );
    }
    check?.(receiver);
  });

  it('nothing else is left: P.work and P.slow are empty, every case settled within a few seconds', async () => {
    expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
    expect(await relay.messageCount(relay.names.slowQueue)).toBe(0);
    expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
    expect(dead.size).toBe(CASES.filter((c) => c.expected !== 'delivered').length);
    expect(settledAt - startedAt).toBeLessThan(10_000);
  });
});

const rssKb = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
const drainOrClose = (socket: Socket): Promise<void> =>
  new Promise((resolve) => {
    const done = (): void => {
      socket.off('drain', done).off('close', done);
      resolve();
    };
    socket.on('drain', done).on('close', done);
  });

describe('a receiver that answers 50 MB (worker as a child process)', () => {
  const open = openedInEachTest();
  let receiver: RawReceiver | undefined;
  afterEach(async () => {
    await receiver?.close();
  });

  it.skipIf(process.platform !== 'linux')(
    'counts as success after reading at most RESPONSE_BODY_LIMIT: the client hangs up early and the RSS stays bounded',
    async () => {
      const SIZE = 50 * 1024 * 1024;
      const HUGE = 4;
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      receiver = await startRawReceiver((request) => {
        if (request.path === '/warm-up') return end(request, responseHead('200 OK', { 'content-length': 2 }) + 'ok');
        void (async () => {
          request.write(responseHead('200 OK', { 'content-length': SIZE, 'content-type': 'application/octet-stream' }));
          for (let sent = 0; sent < SIZE && !request.socket.destroyed; sent += chunk.length) {
            if (!request.write(chunk)) await drainOrClose(request.socket);
          }
          request.socket.end();
        })();
      });
      const relay = await open.relay({ ...ENV, HTTP_TIMEOUT: '10s' });
      const worker = open.worker(relay.config, { RESPONSE_BODY_LIMIT: '65536' });
      await worker.consuming;
      const pid = worker.child.pid as number;
      await relay.publisher.publish({ url: `${receiver.origin}/warm-up`, body: 0 });
      await receiver.waitFor((requests) => requests.some((r) => r.closedAt !== undefined), 10_000);
      await sleep(500);
      const before = rssKb(pid);
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, rssKb(pid))), 20);
      try {
        for (let i = 0; i < HUGE; i += 1) await relay.publisher.publish({ url: `${receiver.origin}/huge/${i}`, body: i });
        const huge = (): RawRequest[] => receiver!.requests.filter((r) => r.path.startsWith('/huge/'));
        await receiver.waitFor(() => huge().length === HUGE && huge().every((r) => r.closedAt !== undefined), 30_000);
        await sleep(500);
      } finally {
        clearInterval(sampler);
      }
      const requests = receiver.requests.filter((r) => r.path.startsWith('/huge/'));
      const written = requests.map((r) => r.written);
      // Each attempt once; each connection closed long before 50 MB were sent (the rest sat in socket buffers at most).
      expect(requests.map((r) => r.path).sort()).toEqual(Array.from({ length: HUGE }, (_, i) => `/huge/${i}`));
      for (const bytes of written) expect(bytes).toBeLessThan(16 * 1024 * 1024);
      const growthMb = (peak - before) / 1024;
      expect(growthMb).toBeLessThan(40); // reading even one body in full would add 50 MB
      // Success: nothing dead-lettered, and after a clean stop nothing returns to P.work (all acked).
      expect(await relay.messageCount(relay.names.deadQueue)).toBe(0);
      expect(worker.child.exitCode).toBeNull();
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
      expect(await relay.messageCount(relay.names.workQueue)).toBe(0);
      expect(worker.output()).not.toMatch(/"level":(50|60)|could not settle/);
      console.info(
        `50 MB answers: RSS ${before} kB → peak ${peak} kB (+${growthMb.toFixed(1)} MB); bytes written before the hang-up: ${written.join(', ')}`,
      );
    },
  );
});
