import { startContainerBroker, dockerAnswers } from './container-broker.js';
import { findRabbitmqServer, startLocalBroker, type LocalBroker } from './local-broker.js';

export interface TestBroker {
  url: string;
  /** Where the harness got the broker: `AMQP_URL`, `testcontainers` or `local-node`. */
  source: 'AMQP_URL' | 'testcontainers' | 'local-node';
  /** Absent for an external broker, which tests must not restart. */
  restart?: () => Promise<void>;
  stop(): Promise<void>;
}

/**
 * The broker for a test run: AMQP_URL if set; else a container when a Docker engine answers; else a
 * throwaway `rabbitmq-server` node of our own.
 */
export async function startTestBroker(options: { allowExternal?: boolean } = {}): Promise<TestBroker> {
  const external = process.env.AMQP_URL;
  if (external && options.allowExternal !== false) return { url: external, source: 'AMQP_URL', stop: async () => {} };
  const bin = findRabbitmqServer();
  if (process.env.TEST_BROKER !== 'local' && (await dockerAnswers())) return withSource(await startContainerBroker(), 'testcontainers');
  if (bin) return withSource(await startLocalBroker(bin), 'local-node');
  throw new Error(
    'integration tests need RabbitMQ: set AMQP_URL, run a Docker engine, or install rabbitmq-server (Debian: apt-get install -y rabbitmq-server)',
  );
}

const withSource = (broker: LocalBroker, source: TestBroker['source']): TestBroker => ({ ...broker, source });
