import amqplib from 'amqplib';
import type { TopologyNames } from '../src/topology/topology-names.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `url` accepts an AMQP connection; `gaveUp()` aborts early (e.g. the node process exited). */
export async function waitForAmqp(url: string, timeoutMs: number, gaveUp: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (gaveUp()) throw new Error(`broker at ${new URL(url).host} exited during startup`);
    try {
      const connection = await amqplib.connect(url);
      await connection.close();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`broker at ${new URL(url).host} not up within ${timeoutMs} ms`);
      await sleep(300);
    }
  }
}

/** Ready messages per queue group (unacked ones are not counted: the broker only reports ready ones). */
export interface Depths {
  work: number;
  /** The ordered shards P.ordered.<n> (their logs, streams that keep every record, are not counted). */
  ordered: number;
  slow: number;
  delay: number;
  dead: number;
}

/** Reads the depths on a short-lived connection; undefined while the broker is unreachable. */
export async function queueDepths(url: string, names: TopologyNames): Promise<Depths | undefined> {
  let connection;
  try {
    connection = await amqplib.connect(url);
    connection.on('error', () => {});
    const channel = await connection.createChannel();
    const count = async (queue: string): Promise<number> => (await channel.checkQueue(queue)).messageCount;
    // A queue of the other delay mode does not exist, and checking a missing queue closes the channel
    // it was checked on: each of those is checked on a channel of its own.
    const countIfDeclared = async (queue: string): Promise<number | undefined> => {
      const own = await connection!.createChannel();
      own.on('error', () => {});
      try {
        return (await own.checkQueue(queue)).messageCount;
      } catch {
        return undefined;
      } finally {
        await own.close().catch(() => {});
      }
    };
    // Plugin mode: P.due, the plugin's landing queue (its own table is not visible over AMQP).
    let delay = (await countIfDeclared(names.dueQueue)) ?? 0;
    // The levels, and those of earlier versions where a prefix still has them (each list's last is its lowest level).
    for (const levels of [names.delayLevels, names.highFirstLevels.queues, names.binaryLevels.queues]) {
      if ((await countIfDeclared(levels.at(-1) as string)) === undefined) continue;
      for (const level of levels) delay += await count(level);
    }
    let work = 0;
    for (const lane of names.workQueues) work += await count(lane);
    let ordered = 0;
    for (const shard of names.orderedQueues) ordered += (await countIfDeclared(shard)) ?? 0;
    return { work, ordered, slow: await count(names.slowQueue), delay, dead: await count(names.deadQueue) };
  } catch {
    return undefined;
  } finally {
    await connection?.close().catch(() => {});
  }
}

/** What P.dead says about one parked callback. */
export interface DeadEntry {
  id: string;
  /** `x-callback-reason`, or the broker's `x-death` reason (e.g. `delivery_limit`) when the relay gave none. */
  reason: string;
  attempts: number | undefined;
  lastError: string | undefined;
}

/**
 * Takes every message out of P.dead (consume + ack) once the workers are stopped, so the count the
 * broker reports up front is final; stops when that many arrived, or after 5 s without one.
 */
export async function drainDead(url: string, names: TopologyNames): Promise<DeadEntry[]> {
  const connection = await amqplib.connect(url);
  const channel = await connection.createChannel();
  const expected = (await channel.checkQueue(names.deadQueue)).messageCount;
  const entries: DeadEntry[] = [];
  let lastAt = Date.now();
  await channel.prefetch(1_000);
  await channel.consume(names.deadQueue, (message) => {
    if (!message) return;
    lastAt = Date.now();
    const headers = message.properties.headers ?? {};
    const text = (value: unknown): string | undefined =>
      value === undefined ? undefined : Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
    const deaths = headers['x-death'] as { reason?: string }[] | undefined;
    const reason = text(headers['x-callback-reason']) ?? `x-death:${deaths?.[0]?.reason ?? 'unknown'}`;
    let id = text(message.properties.messageId);
    // A message parked by the broker itself still has the producer's body id.
    if (!id) id = (JSON.parse(message.content.toString('utf8')) as { id?: string }).id ?? '(no id)';
    const attempts = headers['x-callback-attempts'];
    entries.push({
      id,
      reason,
      attempts: attempts === undefined ? undefined : Number(attempts),
      lastError: text(headers['x-callback-last-error']),
    });
    channel.ack(message);
  });
  while (entries.length < expected && Date.now() - lastAt < 5_000) await sleep(100);
  // Channel first: acks sent just before a bare connection.close() can be dropped (seen on 3.10 with --canary).
  await channel.close();
  await connection.close();
  return entries;
}

/** The canary's rogue consumer (see canary.ts): acks `count` accepted, never-redelivered messages undelivered. */
export async function swallow(
  url: string,
  queue: string,
  count: number,
  accept: (id: string) => boolean,
  onTaken: (id: string) => void,
): Promise<number> {
  const connection = await amqplib.connect(url);
  const channel = await connection.createChannel();
  await channel.prefetch(1);
  let taken = 0;
  const done = new Promise<void>((resolve) => {
    void channel.consume(queue, (message) => {
      if (!message) return;
      // A redelivered message or a retry may already have reached the receiver: swallowing it proves nothing.
      const id = String(message.properties.messageId);
      const fresh = !message.fields.redelivered && message.properties.headers?.['x-callback-attempt'] === undefined && accept(id);
      if (taken >= count || !fresh) return channel.nack(message, false, true);
      taken += 1;
      onTaken(id);
      channel.ack(message);
      if (taken >= count) resolve();
    });
  });
  await Promise.race([done, sleep(30_000)]);
  // Closing the channel first makes the broker settle our acks; a bare connection.close() may drop the last one.
  await channel.close();
  await connection.close();
  return taken;
}
