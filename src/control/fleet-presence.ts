import { randomUUID } from 'node:crypto';
import amqp, { type AmqpConnectionManager, type ChannelWrapper } from 'amqp-connection-manager';
import type { Channel, ConsumeMessage } from 'amqplib';
import { MANAGER_OPTIONS } from '../amqp/connect.js';
import { ALONE, type Fleet } from '../isolation/fleet-share.js';
import type { Logger } from '../logger.js';
import type { TopologyNames } from '../topology/topology-names.js';
import { sleep } from '../util/with-timeout.js';

/** How often a worker says it is alive. */
export const HEARTBEAT_MS = 1_000;
/** A worker not heard from for this long is gone (a crash, a cut connection): about 3 missed heartbeats. */
export const EXPIRE_MS = 3_500;
/** How long a starting worker listens for the others' answers to its hello before it consumes. */
const HELLO_WAIT_MS = 400;

export interface FleetPresenceOptions {
  urls: string[];
  names: TopologyNames;
  logger: Logger;
  clock: () => number;
  /**
   * Resolve only once the others have answered the hello (HELLO_WAIT_MS after connecting), as a worker
   * that enforces a fleet-wide limit from its first message needs; default true. Without, the
   * fleet is counted as the answers come in, and the worker starts consuming at once.
   */
  waitForOthers?: boolean;
}

export interface FleetPresence {
  /** The live workers as this one knows them now. */
  readonly fleet: Fleet;
  /** Calls `listener` each time the live set changes. */
  onChange(listener: (fleet: Fleet) => void): void;
  /** Says goodbye (the others account for this worker's leaving at once) and closes. */
  close(): Promise<void>;
}

interface Beat {
  id: string;
  kind: 'hello' | 'alive' | 'bye';
}

/**
 * Which workers are alive, with RabbitMQ the only shared state: every worker binds an exclusive,
 * server-named queue to the fanout exchange P.presence and publishes a heartbeat there every
 * HEARTBEAT_MS; a worker not heard from for EXPIRE_MS is gone, one that says `bye` is gone at once.
 * A starting worker says `hello`, the others answer at once, so it knows them before it consumes.
 * Each worker's rank is its id's place among the live ids, sorted: the same order on every worker,
 * which is what splitting a limit's concurrency in whole requests needs (isolation/fleet-share.ts).
 * Times are this worker's own clock at receipt, so clocks that disagree do not matter.
 * https://www.rabbitmq.com/docs/queues#exclusive-queues
 */
export async function startFleetPresence({
  urls,
  names,
  logger,
  clock,
  waitForOthers = true,
}: FleetPresenceOptions): Promise<FleetPresence> {
  const id = randomUUID();
  const seen = new Map<string, number>();
  let fleet: Fleet = ALONE;
  let listener: ((fleet: Fleet) => void) | undefined;
  const manager: AmqpConnectionManager = amqp.connect(urls, MANAGER_OPTIONS);
  manager.on('disconnect', ({ err }) => logger.warn({ err: err?.message }, 'presence connection lost; reconnecting'));

  const recount = (): void => {
    const now = clock();
    for (const [other, at] of seen) if (now - at > EXPIRE_MS) seen.delete(other);
    const ids = [...seen.keys(), id].sort();
    const next = { size: ids.length, rank: ids.indexOf(id) };
    if (next.size === fleet.size && next.rank === fleet.rank) return;
    fleet = next;
    logger.info({ workers: fleet.size, rank: fleet.rank }, 'live workers changed');
    listener?.(fleet);
  };

  const send = (kind: Beat['kind']): Promise<void> =>
    channel.publish(names.presenceExchange, '', Buffer.from(JSON.stringify({ id, kind } satisfies Beat)), { persistent: false }).then(
      () => undefined,
      () => undefined,
    );

  const onBeat = (message: ConsumeMessage | null): void => {
    if (message === null) return;
    let beat: Partial<Beat>;
    try {
      beat = JSON.parse(message.content.toString('utf8')) as Partial<Beat>;
    } catch {
      return;
    }
    if (typeof beat.id !== 'string' || beat.id === id) return;
    if (beat.kind === 'bye') seen.delete(beat.id);
    else {
      // A newcomer learns of this worker now, not a heartbeat later.
      if (beat.kind === 'hello' && !seen.has(beat.id)) void send('alive');
      seen.set(beat.id, clock());
    }
    recount();
  };

  const channel: ChannelWrapper = manager.createChannel({
    setup: async (ch: Channel) => {
      await ch.assertExchange(names.presenceExchange, 'fanout', { durable: false, autoDelete: true });
      const { queue } = await ch.assertQueue('', { exclusive: true, autoDelete: true, durable: false });
      await ch.bindQueue(queue, names.presenceExchange, '');
      await ch.consume(queue, onBeat, { noAck: true });
      await ch.publish(names.presenceExchange, '', Buffer.from(JSON.stringify({ id, kind: 'hello' } satisfies Beat)));
    },
  });
  channel.on('error', (error: Error) => logger.warn({ err: error.message }, 'presence channel setup failed'));
  const timer = setInterval(() => {
    void send('alive');
    recount();
  }, HEARTBEAT_MS);
  timer.unref();
  const answered = channel
    .waitForConnect()
    .then(() => sleep(HELLO_WAIT_MS))
    .then(recount);
  if (waitForOthers) await answered;
  else answered.catch(() => {});

  return {
    get fleet() {
      return fleet;
    },
    onChange(change) {
      listener = change;
    },
    async close() {
      clearInterval(timer);
      await send('bye');
      await channel.close().catch(() => {});
      await manager.close().catch(() => {});
    },
  };
}
