import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The operators' step before stopping a plugin-mode node: docs/plugin-mode.md. */
export const BEFORE_STOP_SCRIPT = fileURLToPath(new URL('../../rabbitmq/before-stop.sh', import.meta.url));

/**
 * Runs rabbitmq/before-stop.sh against a node started by startLocalBroker, with the rabbitmqctl that
 * sits next to its rabbitmq-server (Debian's /usr/sbin wrapper would switch to the rabbitmq user,
 * whose HOME holds another cookie). Resolves with what the script printed.
 */
export function runBeforeStop(target: { node: string; home: string }, serverBin: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, HOME: target.home, RABBITMQCTL: join(dirname(serverBin), 'rabbitmqctl') };
    execFile(BEFORE_STOP_SCRIPT, ['-n', target.node], { env, timeout: 60_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${BEFORE_STOP_SCRIPT} -n ${target.node}: ${(stderr || error.message).trim()}`));
      else resolve(stdout.trim());
    });
  });
}
