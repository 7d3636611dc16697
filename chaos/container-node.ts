import { spawnSync } from 'node:child_process';
import { execInContainer, restartContainer, startContainerBroker } from '../test/support/container-broker.js';
import { onCleanup } from './cleanup.js';
import type { ChaosNode } from './single-node.js';

/**
 * The single-node chaos broker as the `rabbitmq/` image of the series under test (TEST_BROKER=container,
 * built from RABBITMQ_IMAGE / DELAYED_PLUGIN*, as the tests' harness builds it). A restart is a container
 * restart: the image's entrypoint runs before-stop.sh on SIGTERM itself (stop-in-order.sh), so the
 * `beforeStop` option changes nothing here: every restart is the orderly one operators get from the image.
 */
export async function startChaosContainer(): Promise<ChaosNode> {
  const broker = await startContainerBroker();
  onCleanup(
    'broker container',
    () => broker.stop(),
    () => {
      spawnSync('docker', ['rm', '-f', '-v', broker.id], { stdio: 'ignore' });
    },
  );
  return {
    url: broker.url,
    node: `container ${broker.id.slice(0, 12)} (${broker.image})`,
    restart: () => restartContainer(broker.id, broker.url),
    cutConnections: async () => {
      await execInContainer(broker.id, ['rabbitmqctl', 'close_all_connections', 'chaos: connection cut']);
    },
  };
}
