import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { GenericContainer } from 'testcontainers';
import { brokerImageSpec } from '../test/support/broker-image.js';
import { OWNER_LABEL, waitForAmqp } from '../test/support/container-broker.js';
import { freePort } from '../test/support/free-port.js';
import { onCleanup } from './cleanup.js';

const run = promisify(execFile);
const RABBITMQ_DIR = fileURLToPath(new URL('../rabbitmq', import.meta.url));
const CLUSTER_CONF = `${RABBITMQ_DIR}/cluster.conf`;

/**
 * The cookie file written from RABBITMQ_ERLANG_COOKIE before the image's own entrypoint, exactly as
 * docker-compose.cluster.yml does: the node and `docker exec rabbitmqctl` both read it from HOME.
 */
const ENTRYPOINT =
  'umask 077 && printf "%s" "$RABBITMQ_ERLANG_COOKIE" > /var/lib/rabbitmq/.erlang.cookie && ' +
  'chown rabbitmq:rabbitmq /var/lib/rabbitmq/.erlang.cookie && exec stop-in-order.sh docker-entrypoint.sh rabbitmq-server';

/** One slot of the cluster: a host port that stays, and the node that currently serves it. */
export interface NodeSlot {
  /** `amqp://…@127.0.0.1:<port>`: the same after a restart, and for a node that replaces this one. */
  url: string;
  port: number;
  /** Container name and node name (rabbit@<host>) of the node in this slot now. */
  container: string;
  host: string;
  node: string;
}

export interface ContainerCluster {
  slots: NodeSlot[];
  /** What the image was built from, for log lines. */
  image: string;
  /** The user-defined network the nodes talk over (Erlang distribution): a partition leaves it. */
  network: string;
  /** Runs a CLI tool (rabbitmqctl, rabbitmq-queues, rabbitmq-upgrade…) on the node of `slot`. */
  cli(slot: number, args: string[], timeoutMs?: number): Promise<string>;
  docker(args: string[], timeoutMs?: number): Promise<string>;
  /** Waits until the node of `slot` accepts AMQP and the cluster reports `expected` nodes running. */
  waitReady(slot: number, expected: number, timeoutMs?: number): Promise<void>;
  /** Keeps the log of the node now in `slot` (chaos/results/logs/node-N.log), e.g. before its container is removed. */
  keepLog(slot: number): Promise<void>;
  /** Creates and starts a fresh node (empty data) in `slot` under hostname `host`; it joins by peer discovery. */
  replaceNode(slot: number, host: string): Promise<void>;
}

/** Writes a container's log (stdout and stderr: the node logs to the console) to `path`; best effort. */
async function keepLog(container: string, path: string): Promise<void> {
  try {
    const { stdout, stderr } = await run('docker', ['logs', container], { timeout: 30_000, maxBuffer: 256 << 20 });
    writeFileSync(path, stdout + stderr);
  } catch {
    // Never created, or already gone.
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Three `rabbitmq/` image containers forming a cluster by classic peer discovery (rabbitmq/cluster.conf,
 * https://www.rabbitmq.com/docs/cluster-formation), on a network of their own. Each publishes AMQP on
 * 127.0.0.1 from Docker's default bridge, so cutting a node off the cluster network (a partition)
 * leaves its clients connected to it, as a split between broker hosts does. Removed with the network
 * by the registered cleanup step, however the run ends.
 */
export async function startContainerCluster(size: number, logDir: string): Promise<ContainerCluster> {
  const spec = brokerImageSpec(process.env);
  process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
  // The same build and tag as the tests' broker containers, so the image is built once for both.
  await GenericContainer.fromDockerfile(RABBITMQ_DIR).withBuildArgs(spec.buildArgs).build(spec.tag, { deleteOnExit: false });
  const tag = randomBytes(3).toString('hex');
  const network = `callback-relay-chaos-${tag}`;
  const cookie = randomBytes(24).toString('hex');
  const logPath = (container: string): string => `${logDir}/node-${container.slice(network.length + 1)}.log`;
  const created = new Set<string>();
  const docker = async (args: string[], timeoutMs = 120_000): Promise<string> =>
    (await run('docker', args, { timeout: timeoutMs, maxBuffer: 16 << 20 })).stdout;
  const removeAll = (): void => {
    for (const name of created) spawnSync('docker', ['rm', '-f', '-v', name], { stdio: 'ignore' });
    spawnSync('docker', ['network', 'rm', network], { stdio: 'ignore' });
  };
  onCleanup(
    'cluster containers',
    async () => {
      // The nodes' own logs first, for a post-mortem beside the workers' (elections, net ticks, partitions).
      await Promise.all([...created].map((name) => keepLog(name, logPath(name))));
      await Promise.all([...created].map((name) => docker(['rm', '-f', '-v', name]).catch(() => undefined)));
      await docker(['network', 'rm', network]).catch(() => undefined);
    },
    removeAll,
  );
  await docker(['network', 'create', '--label', `${OWNER_LABEL}=${process.pid}`, network]);

  const slots: NodeSlot[] = [];
  /** create (default bridge, AMQP on loopback), join the cluster network under its hostname, start. */
  const launch = async (slot: NodeSlot): Promise<void> => {
    created.add(slot.container);
    await docker([
      'create',
      '--name',
      slot.container,
      '--hostname',
      slot.host,
      '--label',
      `${OWNER_LABEL}=${process.pid}`,
      '-p',
      `127.0.0.1:${slot.port}:5672`,
      '-e',
      `RABBITMQ_ERLANG_COOKIE=${cookie}`,
      '-v',
      `${CLUSTER_CONF}:/etc/rabbitmq/conf.d/20-cluster.conf:ro`,
      '--stop-timeout',
      '60',
      '--entrypoint',
      'sh',
      spec.tag,
      '-c',
      ENTRYPOINT,
    ]);
    // Before the start: peer discovery at boot must already reach the other nodes by name.
    await docker(['network', 'connect', '--alias', slot.host, network, slot.container]);
    await docker(['start', slot.container]);
  };
  for (let i = 0; i < size; i += 1) {
    const port = await freePort();
    const host = `rabbitmq-${i + 1}`;
    slots.push({ url: `amqp://guest:guest@127.0.0.1:${port}`, port, container: `${network}-${i + 1}`, host, node: `rabbit@${host}` });
  }
  const cli = (slot: number, args: string[], timeoutMs = 120_000): Promise<string> =>
    docker(['exec', slots[slot]!.container, ...args], timeoutMs);
  const waitReady = async (slot: number, expected: number, timeoutMs = 180_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    await waitForAmqp(slots[slot]!.url, timeoutMs);
    for (;;) {
      try {
        const status = JSON.parse(await cli(slot, ['rabbitmqctl', 'cluster_status', '--formatter', 'json'], 30_000)) as {
          running_nodes?: string[];
        };
        if ((status.running_nodes ?? []).length >= expected) return;
      } catch {
        // The node is still booting, or its metadata store still waits for a majority.
      }
      if (Date.now() > deadline)
        throw new Error(`cluster: ${slots[slot]!.node} does not see ${expected} nodes running within ${timeoutMs / 1000} s`);
      await sleep(1_000);
    }
  };
  await Promise.all(slots.map((slot) => launch(slot)));
  for (let i = 0; i < size; i += 1) await waitReady(i, size);

  return {
    slots,
    image: spec.label,
    network,
    cli,
    docker,
    waitReady,
    keepLog: (slot) => keepLog(slots[slot]!.container, logPath(slots[slot]!.container)),
    async replaceNode(slot, host) {
      const old = slots[slot]!;
      const fresh: NodeSlot = { ...old, container: `${network}-${host}`, host, node: `rabbit@${host}` };
      slots[slot] = fresh;
      await launch(fresh);
      await waitReady(slot, size);
    },
  };
}
