import { brokerChoice } from './broker-image.js';
import { startContainerBroker, dockerAnswers } from './container-broker.js';
import { findRabbitmqServer, startLocalBroker, type LocalBroker } from './local-broker.js';

export interface TestBroker {
  url: string;
  /** Where the harness got the broker: `AMQP_URL`, `testcontainers` or `local-node`. */
  source: 'AMQP_URL' | 'testcontainers' | 'local-node';
  /** The container's id (source `testcontainers`): other processes of the run restart it by it. */
  containerId?: string;
  /** What the container's image was built from (source `testcontainers`). */
  image?: string;
  /** A node started here (source `local-node`): what `rabbitmqctl -n` needs (local-broker.ts). */
  node?: { name: string; home: string; serverBin: string };
  /** Absent for an external broker, which tests must not restart. */
  restart?: () => Promise<void>;
  stop(): Promise<void>;
}

/**
 * The broker for a test run: AMQP_URL if set; else, by TEST_BROKER (broker-image.ts), a container of
 * the `rabbitmq/` image built from RABBITMQ_IMAGE / DELAYED_PLUGIN* (`container`), a throwaway
 * `rabbitmq-server` node of our own (`local`), or (unset: `auto`) a container when a Docker engine
 * answers and a local node otherwise.
 */
export async function startTestBroker(options: { allowExternal?: boolean } = {}): Promise<TestBroker> {
  const external = process.env.AMQP_URL;
  if (external && options.allowExternal !== false) return { url: external, source: 'AMQP_URL', stop: async () => {} };
  const choice = brokerChoice(process.env);
  const bin = findRabbitmqServer();
  if (choice === 'container' || (choice === 'auto' && (await dockerAnswers()))) {
    const broker = await startContainerBroker();
    return { ...broker, source: 'testcontainers', containerId: broker.id };
  }
  if (bin) {
    const local = await startLocalBroker(bin);
    return { ...withSource(local, 'local-node'), node: { name: local.node, home: local.home, serverBin: bin } };
  }
  throw new Error(
    choice === 'local'
      ? 'TEST_BROKER=local needs rabbitmq-server (Debian: apt-get install -y rabbitmq-server)'
      : 'integration tests need RabbitMQ: set AMQP_URL, run a Docker engine, or install rabbitmq-server (Debian: apt-get install -y rabbitmq-server)',
  );
}

const withSource = (broker: LocalBroker, source: TestBroker['source']): TestBroker => ({ ...broker, source });
