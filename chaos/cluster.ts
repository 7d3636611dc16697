import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/support/free-port.js';
import { nodeEnvironment } from '../test/support/local-broker.js';
import { onCleanup } from './cleanup.js';
import { rabbitmqBin, rabbitmqctl } from './rabbitmqctl.js';
import { waitForAmqp } from './queues.js';

/** One member of the throwaway cluster. */
export interface ClusterNode {
  name: string;
  url: string;
  dir: string;
}

export interface Cluster {
  nodes: ClusterNode[];
  /** The shared HOME whose `.erlang.cookie` every node and rabbitmqctl use. */
  home: string;
  /** `rabbitmqctl stop_app` (graceful) or SIGKILL of the node's VM (a crash). */
  stopNode(index: number, how: 'stop_app' | 'kill'): Promise<void>;
  /** Brings a stopped node back: `start_app`, or a fresh `rabbitmq-server` on the same data after a kill. */
  startNode(index: number, how: 'stop_app' | 'kill'): Promise<void>;
  /** `rabbitmqctl close_all_connections` through node `index`; it closes client connections cluster-wide. */
  cutConnections(index: number): Promise<void>;
}

/**
 * A 3-node RabbitMQ cluster on this machine: distinct node names, AMQP and distribution ports and data
 * dirs, one Erlang cookie. Nodes 2 and 3 join node 1 (stop_app, join_cluster, start_app). Stopped
 * and removed by the registered cleanup step, however the run ends.
 */
export async function startCluster(size = 3): Promise<Cluster> {
  const base = mkdtempSync(join(tmpdir(), 'callback-relay-cluster-'));
  const home = join(base, 'home');
  mkdirSync(home);
  // Erlang refuses a cookie file that others can read.
  writeFileSync(join(home, '.erlang.cookie'), randomBytes(16).toString('hex').toUpperCase());
  chmodSync(join(home, '.erlang.cookie'), 0o600);
  const tag = randomBytes(3).toString('hex');
  const nodes: ClusterNode[] = [];
  const children = new Map<number, ChildProcess>();
  const forceStop = (): void => {
    for (const node of nodes) {
      try {
        process.kill(Number(readFileSync(join(node.dir, 'pid'), 'utf8').trim()), 'SIGKILL');
      } catch {
        // Never started or already gone.
      }
    }
    for (const child of children.values()) if (child.exitCode === null) safeKillGroup(child, 'SIGKILL');
    rmSync(base, { recursive: true, force: true });
  };
  const envs: NodeJS.ProcessEnv[] = [];
  for (let i = 0; i < size; i += 1) {
    const [amqpPort, distPort] = [await freePort(), await freePort()];
    const dir = join(base, `n${i + 1}`);
    mkdirSync(dir);
    const name = `cr-c${i + 1}-${tag}@localhost`;
    nodes.push({ name, url: `amqp://guest:guest@127.0.0.1:${amqpPort}`, dir });
    envs.push(nodeEnvironment({ dir, home, node: name, amqpPort, distPort, serverBin: rabbitmqBin('rabbitmq-server') }));
  }
  const boot = async (i: number): Promise<void> => {
    // Own process group (detached), so a stop takes the shell wrapper and the VM down together.
    const child = spawn(rabbitmqBin('rabbitmq-server'), [], { env: envs[i], cwd: nodes[i]!.dir, stdio: 'ignore', detached: true });
    children.set(i, child);
    await waitForAmqp(nodes[i]!.url, 120_000, () => child.exitCode !== null);
  };
  const ctl = (i: number, args: string[]): Promise<string> => rabbitmqctl(nodes[i]!.name, home, args);
  onCleanup(
    'cluster nodes',
    async () => {
      await Promise.all([...children.values()].map((child) => haltGroup(child)));
      rmSync(base, { recursive: true, force: true });
    },
    forceStop,
  );

  await Promise.all(nodes.map((_, i) => boot(i)));
  for (let i = 1; i < size; i += 1) {
    await ctl(i, ['stop_app']);
    await ctl(i, ['join_cluster', nodes[0]!.name]);
    await ctl(i, ['start_app']);
  }
  const status = JSON.parse(await ctl(0, ['cluster_status', '--formatter', 'json'])) as { running_nodes?: string[] };
  if ((status.running_nodes ?? []).length !== size)
    throw new Error(`cluster formed with ${status.running_nodes?.length ?? 0} of ${size} nodes running`);

  return {
    nodes,
    home,
    async stopNode(i, how) {
      if (how === 'stop_app') await ctl(i, ['stop_app']);
      else {
        const child = children.get(i);
        if (child) await haltGroup(child, 'SIGKILL');
      }
    },
    async startNode(i, how) {
      if (how === 'stop_app') await ctl(i, ['start_app']);
      else await boot(i); // the node rejoins on its own: its data dir remembers the cluster
      await waitForAmqp(nodes[i]!.url, 120_000, () => false);
    },
    cutConnections: async (i) => void (await ctl(i, ['close_all_connections', 'chaos: connection cut'])),
  };
}

function safeKillGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // Already gone.
  }
}

/** Sends `signal` to the node's process group and waits for it to exit (SIGKILL after 20 s). */
async function haltGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  safeKillGroup(child, signal);
  const timer = setTimeout(() => safeKillGroup(child, 'SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}
