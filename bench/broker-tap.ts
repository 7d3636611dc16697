import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import amqplib, { type Channel, type ChannelModel, type ConfirmChannel } from 'amqplib';
import { execInContainer } from '../test/support/container-broker.js';

/**
 * What the bench reads straight off the broker, without the management plugin: messages in a queue,
 * publishes per target (through the firehose tracer), and publishes the way a producer in another
 * language would make them (raw AMQP, no library).
 */

const CTL_DIRS = ['/usr/lib/rabbitmq/bin', '/usr/sbin'];

/**
 * `rabbitmqctl -n NODE …` for a throwaway node started by the test harness (it has `node` and the
 * `home` holding its Erlang cookie); undefined for a container or an AMQP_URL broker.
 */
export function localBrokerCtl(broker: object): ((args: string[]) => Promise<string>) | undefined {
  const { node, home } = broker as { node?: unknown; home?: unknown };
  const dir = CTL_DIRS.find((candidate) => existsSync(`${candidate}/rabbitmqctl`));
  if (typeof node !== 'string' || typeof home !== 'string' || !dir) return undefined;
  return (args) =>
    new Promise((resolve, reject) => {
      execFile(
        `${dir}/rabbitmqctl`,
        ['-n', node, ...args],
        { env: { ...process.env, HOME: home }, timeout: 60_000, encoding: 'utf8' },
        (error, stdout, stderr) =>
          error ? reject(new Error(`rabbitmqctl ${args.join(' ')}: ${(stderr || error.message).trim()}`)) : resolve(stdout),
      );
    });
}

/** `rabbitmqctl ARGS…` on a local throwaway node or in a harness container (diagnostics only). */
export function brokerInspect(broker: object): ((args: string[]) => Promise<string>) | undefined {
  const { id } = broker as { id?: unknown };
  if (typeof id === 'string') return (args) => execInContainer(id, ['rabbitmqctl', ...args]);
  return localBrokerCtl(broker);
}

/** One AMQP connection of the bench's own, for inspection and raw publishes. */
export class BrokerTap {
  private constructor(
    private readonly connection: ChannelModel,
    private readonly confirm: ConfirmChannel,
  ) {}

  static async open(url: string): Promise<BrokerTap> {
    const connection = await amqplib.connect(url);
    connection.on('error', () => {});
    const confirm = await connection.createConfirmChannel();
    confirm.on('error', () => {});
    return new BrokerTap(connection, confirm);
  }

  /** Ready messages in `queue` (P.dead is never consumed in a run, so: the callbacks parked there); 0 while it does not exist. */
  async messageCount(queue: string): Promise<number> {
    // A failed check closes its channel, so each check gets its own.
    const channel = await this.connection.createChannel();
    channel.on('error', () => {});
    try {
      return (await channel.checkQueue(queue)).messageCount;
    } catch {
      return 0;
    } finally {
      await channel.close().catch(() => {});
    }
  }

  /**
   * Publishes callbacks as docs/wire-contract.md describes for another language, to `exchange` with
   * routing key `routingKey` (plain `deliver`: no bucket computed), confirmed, `batch` at a time.
   * Mandatory: the broker confirms an unroutable message and drops it (a binding not made yet), so
   * one it returns fails the run instead of showing up as a callback the relay never delivered.
   */
  async publishRaw(
    exchange: string,
    routingKey: string,
    callbacks: Array<{ id: string; url: string; body: unknown }>,
    batch = 500,
  ): Promise<void> {
    const returned: string[] = [];
    const onReturn = (message: { properties: { messageId?: string } }): void => void returned.push(message.properties.messageId ?? '?');
    this.confirm.on('return', onReturn);
    try {
      for (let start = 0; start < callbacks.length; start += batch) {
        for (const callback of callbacks.slice(start, start + batch)) {
          this.confirm.publish(exchange, routingKey, Buffer.from(JSON.stringify({ url: callback.url, body: callback.body })), {
            contentType: 'application/json',
            deliveryMode: 2,
            messageId: callback.id,
            mandatory: true,
          });
        }
        await this.confirm.waitForConfirms();
      }
    } finally {
      this.confirm.off('return', onReturn);
    }
    if (returned.length)
      throw new Error(
        `the broker returned ${returned.length} raw publishes to ${exchange} with key ${routingKey} as unroutable (first: ${returned[0]}): is the topology declared?`,
      );
  }

  async close(): Promise<void> {
    await this.connection.close().catch(() => {});
  }
}

/**
 * Every client publish on the vhost, counted by the origin of the callback URL in its body, through
 * RabbitMQ's firehose tracer (`rabbitmqctl trace_on`, https://www.rabbitmq.com/docs/firehose): a
 * copy of each published message goes to `amq.rabbitmq.trace` with routing key `publish.<exchange>`.
 * Dead-lettering inside the broker (a delay level's TTL) is no publish and is not traced; producer
 * publishes, retry copies, dead-letter copies and any move a worker makes are. Outcome events
 * (`P.events`) carry no callback body and are left out.
 */
export class PublishTap {
  readonly byOrigin = new Map<string, number>();
  private channel: Channel | undefined;

  private constructor(
    private readonly connection: ChannelModel,
    private readonly ctl: (args: string[]) => Promise<string>,
  ) {}

  /** Undefined when the bench cannot run rabbitmqctl on the broker (a container or AMQP_URL). */
  static async start(url: string, ctl: ((args: string[]) => Promise<string>) | undefined): Promise<PublishTap | undefined> {
    if (!ctl) return undefined;
    const connection = await amqplib.connect(url);
    connection.on('error', () => {});
    const tap = new PublishTap(connection, ctl);
    const channel = await connection.createChannel();
    tap.channel = channel;
    const queue = `bench-trace-${randomBytes(4).toString('hex')}`;
    await channel.assertQueue(queue, { exclusive: true, autoDelete: true, durable: false });
    await channel.bindQueue(queue, 'amq.rabbitmq.trace', 'publish.#');
    await channel.consume(
      queue,
      (message) => {
        if (!message) return;
        const exchange = String(message.properties.headers?.exchange_name ?? '');
        if (exchange.endsWith('.events')) return;
        try {
          const { url: target } = JSON.parse(message.content.toString('utf8')) as { url?: unknown };
          if (typeof target !== 'string') return;
          const origin = new URL(target).origin;
          tap.byOrigin.set(origin, (tap.byOrigin.get(origin) ?? 0) + 1);
        } catch {
          // not a callback body
        }
      },
      { noAck: true },
    );
    await ctl(['trace_on']);
    return tap;
  }

  /** Forgets the counts so far (a new run; a port, and so an origin, may be used again). */
  reset(): void {
    this.byOrigin.clear();
  }

  /** Publishes traced for these origins. */
  count(origins: Iterable<string>): number {
    let total = 0;
    for (const origin of origins) total += this.byOrigin.get(origin) ?? 0;
    return total;
  }

  /** Turns the tracer off (it costs the broker a copy of every publish) and lets the last copies arrive. */
  async stop(): Promise<void> {
    await this.ctl(['trace_off']).catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 300));
    await this.connection.close().catch(() => {});
  }
}
