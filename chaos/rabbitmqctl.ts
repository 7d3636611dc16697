import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';

const BIN_DIRS = ['/usr/lib/rabbitmq/bin', '/usr/sbin'];

/** The directory of the RabbitMQ CLI tools next to the server we run. */
export function rabbitmqBin(tool: 'rabbitmqctl' | 'rabbitmq-server'): string {
  const dir = BIN_DIRS.find((candidate) => existsSync(`${candidate}/${tool}`));
  if (!dir) throw new Error(`${tool} not found (install Debian's rabbitmq-server)`);
  return `${dir}/${tool}`;
}

/**
 * Runs `rabbitmqctl -n NODE …`. `home` must hold the node's `.erlang.cookie`: the CLI is itself an
 * Erlang node and is only let in with the same cookie.
 */
export function rabbitmqctl(node: string, home: string, args: string[], timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      rabbitmqBin('rabbitmqctl'),
      ['-n', node, ...args],
      { env: { ...process.env, HOME: home }, timeout: timeoutMs, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`rabbitmqctl -n ${node} ${args.join(' ')}: ${(stderr || error.message).trim()}`));
        else resolve(stdout);
      },
    );
  });
}
