import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBeforeStop } from '../test/support/before-stop.js';
import { findRabbitmqServer, startLocalBroker } from '../test/support/local-broker.js';
import { brokerChoice } from '../test/support/broker-image.js';
import { onCleanup } from './cleanup.js';
import { startChaosContainer } from './container-node.js';
import { rabbitmqctl } from './rabbitmqctl.js';

/** The tests' throwaway node, plus what chaos needs on top: its node name and cookie for rabbitmqctl. */
export interface ChaosNode {
  url: string;
  node: string;
  /**
   * Stops the node process and starts it on the same data (test/support/local-broker.ts restart()).
   * `beforeStop`: the way docs/plugin-mode.md tells operators to stop a plugin-mode node, running
   * rabbitmq/before-stop.sh first.
   */
  restart(options?: { beforeStop?: boolean }): Promise<void>;
  /** `rabbitmqctl close_all_connections`: every client sees its socket closed by the broker. */
  cutConnections(): Promise<void>;
}

/**
 * Starts a node with `startLocalBroker` (own node name, ports, data dir). It is started under a
 * private TMPDIR so that we know its data dir — which holds the Erlang cookie rabbitmqctl needs, and
 * which we must remove even if `stop()` is never reached.
 */
export async function startChaosNode(): Promise<ChaosNode> {
  // TEST_BROKER=container: the rabbitmq/ image of the series under test instead (chaos/container-node.ts).
  if (brokerChoice(process.env) === 'container') return startChaosContainer();
  const bin = findRabbitmqServer();
  if (!bin) throw new Error('rabbitmq-server not found (Debian: apt-get install -y rabbitmq-server)');
  const base = mkdtempSync(join(tmpdir(), 'callback-relay-chaos-'));
  const savedTmp = process.env.TMPDIR;
  process.env.TMPDIR = base; // os.tmpdir() reads it on every call, so startLocalBroker's mkdtemp lands in `base`
  let broker;
  try {
    broker = startLocalBroker(bin);
  } finally {
    if (savedTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmp;
  }
  const dir = join(base, readdirSync(base).find((name) => name.startsWith('callback-relay-broker-')) ?? '');
  const forceStop = (): void => {
    // RABBITMQ_PID_FILE holds the Erlang VM's pid; killing it takes the node down at once.
    try {
      process.kill(Number(readFileSync(join(dir, 'pid'), 'utf8').trim()), 'SIGKILL');
    } catch {
      // Not started, or already gone.
    }
    rmSync(base, { recursive: true, force: true });
  };
  let started;
  try {
    started = await broker;
  } catch (error) {
    forceStop();
    throw error;
  }
  onCleanup(
    'single broker node',
    async () => {
      await started.stop();
      rmSync(base, { recursive: true, force: true });
    },
    forceStop,
  );
  const port = new URL(started.url).port;
  // The naming rule of startLocalBroker: cr-test-<our pid>-<AMQP port>@localhost.
  const node = `cr-test-${process.pid}-${port}@localhost`;
  return {
    url: started.url,
    node,
    restart: async (options) => {
      if (options?.beforeStop) await runBeforeStop(started, bin);
      await started.restart();
    },
    cutConnections: async () => {
      await rabbitmqctl(node, dir, ['close_all_connections', 'chaos: connection cut']);
    },
  };
}
