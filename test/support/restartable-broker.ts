import { inject } from 'vitest';
import { startTestBroker, type TestBroker } from './broker.js';
import { restartContainer } from './container-broker.js';

/** A broker a test may restart, and whether its restart runs rabbitmq/before-stop.sh by itself. */
export interface RestartableBroker extends TestBroker {
  /** True for the rabbitmq/ image: its entrypoint runs before-stop.sh on SIGTERM (stop-in-order.sh). */
  stopsInOrder: boolean;
}

/**
 * The broker for tests that restart one. When the run's broker is the harness's own container (the
 * series under test, e.g. TEST_BROKER=container RABBITMQ_IMAGE=rabbitmq:4.3-management), that very
 * container is restarted: files run one after another, so no other test sees it go. Otherwise a
 * broker of the test's own (a throwaway node, or a container when a Docker engine answers): an
 * external AMQP_URL broker is never restarted. Undefined when none can be had.
 */
export async function restartableBroker(): Promise<RestartableBroker | undefined> {
  const id = inject('brokerContainerId');
  if (inject('brokerSource') === 'testcontainers' && id) {
    const url = inject('amqpUrl');
    return { url, source: 'testcontainers', containerId: id, stopsInOrder: true, restart: () => restartContainer(id, url), stop: async () => {} };
  }
  const own = await startTestBroker({ allowExternal: false }).catch(() => undefined);
  return own && { ...own, stopsInOrder: own.source === 'testcontainers' };
}

export const NO_RESTART = 'no restartable broker (needs rabbitmq-server or a Docker engine)';
