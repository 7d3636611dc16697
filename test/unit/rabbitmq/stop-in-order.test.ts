import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const SCRIPT = fileURLToPath(new URL('../../../rabbitmq/stop-in-order.sh', import.meta.url));
let dir = '';

/** A stand-in broker and before-stop step that write what happens, in order, to one log. */
function fakes(before: 'ok' | 'fails', serverExit = 0): { log: string; server: string; before: string } {
  dir = mkdtempSync(join(tmpdir(), 'stop-in-order-'));
  const log = join(dir, 'log');
  const server = join(dir, 'server.sh');
  const step = join(dir, 'before.sh');
  writeFileSync(
    server,
    `#!/usr/bin/env bash\ntrap 'echo server-stopped >> "${log}"; exit ${serverExit}' TERM\necho server-up >> "${log}"\nwhile true; do sleep 0.05; done\n`,
  );
  writeFileSync(step, `#!/usr/bin/env bash\necho before-stop >> "${log}"\n${before === 'fails' ? 'exit 1' : ''}\n`);
  chmodSync(server, 0o755);
  chmodSync(step, 0o755);
  return { log, server, before: step };
}

/** Starts the entrypoint, waits for the stand-in broker, sends SIGTERM as `docker stop` does; resolves with the exit status. */
async function stopWithTerm(paths: ReturnType<typeof fakes>): Promise<number | null> {
  const child = spawn(SCRIPT, [paths.server], { env: { ...process.env, BEFORE_STOP: paths.before }, stdio: 'ignore' });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  for (let i = 0; i < 100 && !readLog(paths.log).includes('server-up'); i += 1) await new Promise((r) => setTimeout(r, 50));
  child.kill('SIGTERM');
  return exited;
}

const readLog = (log: string): string => {
  try {
    return readFileSync(log, 'utf8');
  } catch {
    return '';
  }
};

afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('rabbitmq/stop-in-order.sh (the broker image entrypoint)', () => {
  it('on SIGTERM runs before-stop first, then stops the broker, and exits with its status', async () => {
    const paths = fakes('ok', 3);
    expect(await stopWithTerm(paths)).toBe(3);
    expect(readLog(paths.log).trim().split('\n')).toEqual(['server-up', 'before-stop', 'server-stopped']);
  });

  it('stops the broker even when before-stop fails', async () => {
    const paths = fakes('fails');
    expect(await stopWithTerm(paths)).toBe(0);
    expect(readLog(paths.log).trim().split('\n')).toEqual(['server-up', 'before-stop', 'server-stopped']);
  });
});
