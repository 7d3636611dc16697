import { fileURLToPath } from 'node:url';
import { GenericContainer, Wait, getContainerRuntimeClient, type StartedTestContainer } from 'testcontainers';
import type { LocalBroker } from './local-broker.js';

const RABBITMQ_DIR = fileURLToPath(new URL('../../rabbitmq', import.meta.url));

/** Whether a Docker engine answers (the client alone is not enough). */
export async function dockerAnswers(): Promise<boolean> {
  try {
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

/**
 * The project's broker image (`rabbitmq/`, which includes the delayed-message plugin) in a
 * container. A restart is stop_app/start_app inside it, which drops every connection like a broker
 * restart does while keeping the mapped port.
 */
export async function startContainerBroker(): Promise<LocalBroker> {
  const image = await GenericContainer.fromDockerfile(RABBITMQ_DIR).build('callback-relay-test-rabbitmq', { deleteOnExit: false });
  const container: StartedTestContainer = await image
    .withExposedPorts(5672)
    .withWaitStrategy(Wait.forLogMessage(/Server startup complete/))
    .withStartupTimeout(120_000)
    .start();
  const url = `amqp://guest:guest@${container.getHost()}:${container.getMappedPort(5672)}`;
  return {
    url,
    restart: async () => {
      await container.exec(['rabbitmqctl', 'stop_app']);
      await container.exec(['rabbitmqctl', 'start_app']);
    },
    stop: async () => {
      await container.stop();
    },
  };
}
