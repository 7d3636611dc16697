import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';

/**
 * A TCP port free a moment ago on 127.0.0.1, for something that listens on it later, and again after
 * a restart (a broker container's published port, a throwaway node's ports, a metrics port).
 *
 * Chosen below the kernel's ephemeral range, never in it: every `listen(0)` of the run (receivers,
 * other processes' servers) and every outgoing connection take their ports from that range, so a
 * port from it can be taken in the gap before our listener binds it, or while a restarted broker is
 * down: the broker then cannot listen again, and every test after it waits on a broker that never
 * comes back (or on whatever took the port).
 */
export async function freePort(): Promise<number> {
  const below = ephemeralStart();
  const lowest = Math.max(1024, below - 12_000);
  for (let tries = 0; tries < 50; tries += 1) {
    const port = lowest + Math.floor(Math.random() * (below - lowest));
    if (await bindable(port)) return port;
  }
  // Every port tried was taken: let the kernel choose one.
  return listenOnce(0);
}

/** The first port of the kernel's ephemeral range (Linux), or the usual 32768 where it cannot be read. */
function ephemeralStart(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 2048 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

const bindable = (port: number): Promise<boolean> =>
  listenOnce(port).then(
    () => true,
    () => false,
  );

/** Listens on `port` of 127.0.0.1 and closes again; resolves with the port that was bound. */
const listenOnce = (port: number): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const bound = (server.address() as { port: number }).port;
      server.close(() => resolve(bound));
    });
  });

/** Starts `server` on a free port of 127.0.0.1 and returns its `http://127.0.0.1:PORT` origin. */
export async function listenOnLoopback(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}
