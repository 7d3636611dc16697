// Example webhook receiver for trying callback-relay locally (docker compose service `receiver`).
// Plain JavaScript, Node built-ins only:  PORT=3000 node examples/receiver.mjs
//
// The answer depends on the path:
//   /ok…    200 "success"   (delivered)
//   /fail…  500             (retried later, then dead-lettered)
//   /gone…  404             (a permanent failure)
//   /slow…  200 after 5 s   (set HTTP_TIMEOUT below 5s to see timeouts)
//   other   200
import { createServer } from 'node:http';

const port = Number(process.env.PORT ?? 3000);
const SLOW_MS = 5_000;

/** @param {string} path @returns {{ status: number, body: string, delayMs: number }} */
function answerFor(path) {
  if (path.startsWith('/ok')) return { status: 200, body: 'success', delayMs: 0 };
  if (path.startsWith('/fail')) return { status: 500, body: 'failing on purpose', delayMs: 0 };
  if (path.startsWith('/gone')) return { status: 404, body: 'gone', delayMs: 0 };
  if (path.startsWith('/slow')) return { status: 200, body: 'success (slow)', delayMs: SLOW_MS };
  return { status: 200, body: 'ok', delayMs: 0 };
}

const server = createServer((req, res) => {
  const path = new URL(req.url ?? '/', 'http://receiver').pathname;
  let bytes = 0;
  req.on('data', (chunk) => {
    bytes += chunk.length;
  });
  req.on('end', () => {
    const { status, body, delayMs } = answerFor(path);
    const id = req.headers['webhook-id'] ?? '-';
    const attempt = req.headers['x-callback-attempt'] ?? '-';
    console.log(
      `${new Date().toISOString()} ${req.method} ${path} webhook-id=${id} attempt=${attempt} body=${bytes}B -> ${status}${delayMs ? ` after ${delayMs}ms` : ''}`,
    );
    const send = () => {
      res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(body);
    };
    if (delayMs === 0) return send();
    const timer = setTimeout(send, delayMs);
    // The relay may give up first (HTTP_TIMEOUT); then there is nobody left to answer.
    res.on('close', () => clearTimeout(timer));
  });
});

server.listen(port, () => console.log(`receiver listening on :${port}`));

// As PID 1 in a container, Node only stops on SIGTERM if it handles it.
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
