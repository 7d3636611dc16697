import type { TestProject } from 'vitest/node';
import { inspectBroker } from '../../src/topology/connect-topology.js';
import { startTestBroker, type TestBroker } from './broker.js';

declare module 'vitest' {
  export interface ProvidedContext {
    amqpUrl: string;
    brokerSource: string;
    /** The harness's broker container ('' unless brokerSource is testcontainers): restartable by id. */
    brokerContainerId: string;
    /** JSON of the harness's local node ({ name, home, serverBin }), '' unless brokerSource is local-node: for rabbitmqctl. */
    brokerNode: string;
    brokerVersion: string;
    hasDelayedPlugin: boolean;
  }
}

let broker: TestBroker | undefined;

/** One broker for the whole integration run; every test isolates itself with a random topology prefix. */
export async function setup(project: TestProject): Promise<void> {
  broker = await startTestBroker();
  const info = await inspectBroker(broker.url);
  project.provide('amqpUrl', broker.url);
  project.provide('brokerSource', broker.source);
  project.provide('brokerContainerId', broker.containerId ?? '');
  project.provide('brokerNode', broker.node ? JSON.stringify(broker.node) : '');
  project.provide('brokerVersion', info.version);
  project.provide('hasDelayedPlugin', info.hasDelayedPlugin);
  const image = broker.image ? ` (rabbitmq/ image: ${broker.image})` : '';
  process.stdout.write(`integration broker: RabbitMQ ${info.version} via ${broker.source}${image}\n`);
  const without =
    broker.source === 'testcontainers'
      ? 'DELAYED_PLUGIN=on with a matching DELAYED_PLUGIN_VERSION/COMMIT builds it into the image; RabbitMQ 4.3+ cannot run it'
      : broker.source === 'AMQP_URL'
        ? 'the broker of AMQP_URL has not enabled it'
        : 'RABBITMQ_PLUGINS_DIR loads the plugin into the throwaway node';
  process.stdout.write(
    info.hasDelayedPlugin
      ? 'plugin-mode suites: running (broker has x-delayed-message)\n'
      : `plugin-mode suites: skipped: broker lacks x-delayed-message (${without})\n`,
  );
}

export async function teardown(): Promise<void> {
  await broker?.stop();
}
