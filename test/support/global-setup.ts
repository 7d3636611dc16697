import type { TestProject } from 'vitest/node';
import { inspectBroker } from '../../src/topology/inspect-broker.js';
import { startTestBroker, type TestBroker } from './broker.js';

declare module 'vitest' {
  export interface ProvidedContext {
    amqpUrl: string;
    brokerSource: string;
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
  project.provide('hasDelayedPlugin', info.hasDelayedPlugin);
  process.stdout.write(`integration broker: RabbitMQ ${info.version} via ${broker.source}\n`);
  process.stdout.write(
    info.hasDelayedPlugin ? 'plugin-mode suites: running (broker has x-delayed-message)\n' : 'plugin-mode suites: skipped: broker lacks x-delayed-message (RABBITMQ_PLUGINS_DIR loads the plugin into the throwaway node)\n',
  );
}

export async function teardown(): Promise<void> {
  await broker?.stop();
}
