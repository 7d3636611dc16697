import { startTestBroker, type TestBroker } from './broker.js';

/** A broker a test may restart, and whether its restart runs rabbitmq/before-stop.sh by itself. */
export interface RestartableBroker extends TestBroker {
  /** True for the rabbitmq/ image: its entrypoint runs before-stop.sh on SIGTERM (stop-in-order.sh). */
  stopsInOrder: boolean;
}

/**
 * The broker for tests that restart one: a broker of the test's own (a container of the series under
 * test when a Docker engine answers, else a throwaway node), never the run's shared broker and never
 * an external AMQP_URL one. The shared container is not restarted any more: on RabbitMQ 4.0 with the
 * plugin, every test file after such a restart could hang until its timeout (seen in CI, cause not
 * found), so a restart now stays with the test that makes it. Undefined when none can be had.
 */
export async function restartableBroker(): Promise<RestartableBroker | undefined> {
  const own = await startTestBroker({ allowExternal: false }).catch(() => undefined);
  return own && { ...own, stopsInOrder: own.source === 'testcontainers' };
}

export const NO_RESTART = 'no restartable broker (needs rabbitmq-server or a Docker engine)';
