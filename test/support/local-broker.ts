import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import amqplib from 'amqplib';
import { nodePlugins } from './broker-plugins.js';
import { freePort } from './free-port.js';

/** A throwaway RabbitMQ node: its own node name, ports and data directory, removed on stop. */
export interface LocalBroker {
  url: string;
  /** Stops the node process and starts it again on the same data (a real broker restart). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** A node started here: its name, and the HOME holding its Erlang cookie (what `rabbitmqctl -n` needs). */
export interface LocalNode extends LocalBroker {
  node: string;
  home: string;
}

/** The broker settings the rabbitmq/ image ships (the dead-letter hop's retry interval): nodes here run with them too. */
const ADVANCED_CONFIG = fileURLToPath(new URL('../../rabbitmq/advanced.config', import.meta.url));

const CANDIDATES = [process.env.RABBITMQ_SERVER_BIN, '/usr/lib/rabbitmq/bin/rabbitmq-server', '/usr/sbin/rabbitmq-server'];

/** `rabbitmqctl ARGS` on a node started by startLocalBroker from `serverBin` (its HOME holds the Erlang cookie); its stdout. */
export async function localRabbitmqctl(serverBin: string, target: LocalNode, args: string[]): Promise<string> {
  const ctl = join(dirname(serverBin), 'rabbitmqctl');
  return (await promisify(execFile)(ctl, ['-n', target.node, ...args], { env: { ...process.env, HOME: target.home }, timeout: 60_000 }))
    .stdout;
}

export function findRabbitmqServer(): string | undefined {
  const onPath = spawnSync('sh', ['-c', 'command -v rabbitmq-server'], { encoding: 'utf8' }).stdout.trim();
  return [...CANDIDATES, onPath].find((path): path is string => !!path && existsSync(path));
}

export interface NodeLayout {
  /** Data, logs and config of the node go here. */
  dir: string;
  /** HOME of the node and its CLI tools: where the Erlang cookie lives (shared by a cluster's nodes). */
  home: string;
  node: string;
  amqpPort: number;
  distPort: number;
  /** The rabbitmq-server that will run the node: its own plugins folder stays on the search path. */
  serverBin: string;
}

/**
 * Writes a node's rabbitmq.conf (loopback listener, guest allowed), enabled_plugins (none, or the
 * delayed-message plugin when RABBITMQ_PLUGINS_DIR offers it: see broker-plugins.ts) and the image's
 * advanced.config into `dir`, and
 * returns the environment that makes rabbitmq-server run it as its own node.
 */
export function nodeEnvironment({ dir, home, node, amqpPort, distPort, serverBin }: NodeLayout): NodeJS.ProcessEnv {
  const plugins = nodePlugins(serverBin, process.env.RABBITMQ_PLUGINS_DIR);
  writeFileSync(join(dir, 'rabbitmq.conf'), `listeners.tcp.default = 127.0.0.1:${amqpPort}\nloopback_users = none\n`);
  writeFileSync(join(dir, 'enabled_plugins'), `[${plugins.enabled.join(',')}].\n`);
  copyFileSync(ADVANCED_CONFIG, join(dir, 'advanced.config'));
  const { RABBITMQ_PLUGINS_DIR: _given, ...inherited } = process.env;
  return {
    ...inherited,
    ...(plugins.pluginsDir ? { RABBITMQ_PLUGINS_DIR: plugins.pluginsDir } : {}),
    HOME: home,
    RABBITMQ_NODENAME: node,
    RABBITMQ_NODE_PORT: String(amqpPort),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: join(dir, 'log'),
    RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq.conf'),
    RABBITMQ_ADVANCED_CONFIG_FILE: join(dir, 'advanced.config'),
    RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
    RABBITMQ_PID_FILE: join(dir, 'pid'),
  };
}

/** `customize` may change the node's environment (and the files it names) before the first boot. */
export async function startLocalBroker(bin: string, customize?: (env: NodeJS.ProcessEnv) => void): Promise<LocalNode> {
  const dir = mkdtempSync(join(tmpdir(), 'callback-relay-broker-'));
  const [amqpPort, distPort] = [await freePort(), await freePort()];
  const node = `cr-test-${process.pid}-${amqpPort}@localhost`;
  const env = nodeEnvironment({ dir, home: dir, node, amqpPort, distPort, serverBin: bin });
  customize?.(env);
  const url = `amqp://guest:guest@127.0.0.1:${amqpPort}`;
  let child: ChildProcess | undefined;

  /**
   * Starts the node. A node started right after a stop now and then exits at once with status 0
   * (seen about once in 20 chaos restarts, with and without before-stop.sh, never at a first boot):
   * it is booted again a moment later, up to three times, before the start counts as failed.
   */
  async function boot(): Promise<void> {
    for (let tries = 1; ; tries += 1) {
      child = spawn(bin, [], { env, stdio: 'ignore', detached: true });
      try {
        return await waitUntilUp(url, child);
      } catch (error) {
        if (child.exitCode === null || tries >= 3) throw error;
        await new Promise((resolve) => setTimeout(resolve, 2_000));
      }
    }
  }

  async function halt(): Promise<void> {
    const running = child;
    if (!running || running.exitCode !== null) return;
    const vm = erlangPid();
    const exited = new Promise((resolve) => running.once('exit', resolve));
    try {
      process.kill(-running.pid!, 'SIGTERM');
    } catch {
      return;
    }
    const timer = setTimeout(() => process.kill(-running.pid!, 'SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
    // The script can exit before the Erlang VM has finished stopping; a node booted while the old VM
    // still holds the node name exits at once. Wait for the VM itself.
    if (vm !== undefined) await vmGone(vm, 20_000);
  }

  /** The Erlang VM's pid (RABBITMQ_PID_FILE), once the node wrote it. */
  function erlangPid(): number | undefined {
    try {
      const pid = Number(readFileSync(env.RABBITMQ_PID_FILE as string, 'utf8').trim());
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  await boot();
  return {
    url,
    node,
    home: dir,
    restart: async () => {
      await halt();
      await boot();
    },
    stop: async () => {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves once process `pid` is gone; SIGKILLs it after `timeoutMs`. */
async function vmGone(pid: number, timeoutMs: number): Promise<void> {
  const alive = (): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const deadline = Date.now() + timeoutMs;
  while (alive()) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function waitUntilUp(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`rabbitmq-server exited with code ${child.exitCode} during startup`);
    try {
      const connection = await amqplib.connect(url);
      await connection.close();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  }
  throw new Error('rabbitmq-server did not accept connections within 90 s');
}
