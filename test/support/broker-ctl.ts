import { inject } from 'vitest';
import { execInContainer } from './container-broker.js';
import { localRabbitmqctl, type LocalNode } from './local-broker.js';

/** Runs rabbitmqctl on the harness's broker; its stdout. */
export type BrokerCtl = (args: string[]) => Promise<string>;

/**
 * rabbitmqctl for the integration run's broker: `docker exec` into the harness container, or the
 * local node's own rabbitmqctl. Undefined for an external broker (AMQP_URL), which tests must not administer.
 */
export function brokerCtl(): BrokerCtl | undefined {
  const id = inject('brokerContainerId');
  if (inject('brokerSource') === 'testcontainers' && id) return (args) => execInContainer(id, ['rabbitmqctl', ...args]);
  const node = inject('brokerNode');
  if (inject('brokerSource') !== 'local-node' || !node) return undefined;
  const { name, home, serverBin } = JSON.parse(node) as { name: string; home: string; serverBin: string };
  return (args) => localRabbitmqctl(serverBin, { node: name, home } as LocalNode, args);
}

/** `url` with another user and password (the vhost and host kept). */
export function asUser(url: string, user: string, password: string): string {
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(user);
  parsed.password = encodeURIComponent(password);
  return parsed.toString().replace(/\/$/, '');
}
