import { afterEach, expect, inject, it } from 'vitest';
import { execInContainer } from '../support/container-broker.js';
import { findRabbitmqServer, localRabbitmqctl, startLocalBroker, type LocalNode } from '../support/local-broker.js';

// rabbitmq/advanced.config, as the rabbitmq/ image and the throwaway nodes load it, must reach the
// parts of the broker it is meant for: RabbitMQ 4.3 sizes the quorum queues' write-ahead log from
// rabbit's quorum_wal_max_size_bytes and ignores ra's wal_max_size_bytes, which earlier releases read
// (docs/delay-modes.md, "Broker memory per pending callback"). Read on the run's broker when it is the
// harness's container (the series under test), else on a throwaway node of our own.
const serverBin = findRabbitmqServer();
let node: LocalNode | undefined;

afterEach(async () => {
  await node?.stop();
  node = undefined;
});

async function evalOnBroker(expression: string): Promise<string> {
  const id = inject('brokerContainerId');
  if (inject('brokerSource') === 'testcontainers' && id) return (await execInContainer(id, ['rabbitmqctl', 'eval', expression])).trim();
  if (serverBin === undefined) throw new Error('no broker to read the settings of: the harness container or rabbitmq-server');
  node = node ?? (await startLocalBroker(serverBin));
  return (await localRabbitmqctl(serverBin, node, ['eval', expression])).trim();
}

it.skipIf(inject('brokerSource') === 'AMQP_URL')(
  'the shipped broker settings take effect: the quorum write-ahead log rolls over at 32 MiB, the dead-letter workers keep 1,024 in flight',
  async () => {
    // The size the quorum queues' Ra system runs with, where the release has one, else ra's setting.
    const wal = await evalOnBroker(
      'code:ensure_loaded(ra_system), case erlang:function_exported(ra_system, fetch, 1) andalso ra_system:fetch(quorum_queues) of #{wal_max_size_bytes := S} -> S; _ -> element(2, application:get_env(ra, wal_max_size_bytes)) end.',
    );
    expect(wal).toBe(String(32 * 1024 * 1024));
    expect(await evalOnBroker('application:get_env(rabbit, dead_letter_worker_consumer_prefetch).')).toBe('{ok,1024}');
  },
);
