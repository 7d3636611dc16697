import amqplib from 'amqplib';
import type { TopologyNames } from '../src/topology/topology-names.js';
import { idOf } from './fates.js';
import type { Attempt } from './ledger.js';
import type { DeadEntry } from './queues.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** What EVENTS=durable told a status table about one callback: its final event types (`canceled` counts as dead), after deduplication. */
interface Finals {
  delivered: boolean;
  dead: boolean;
}

/** The check of `--events durable`: a status table fed by P.events never misses, nor invents, a final outcome. */
export interface EventsVerdict {
  /** Event messages read, and how many of them repeated a message id already seen (a redelivery's event). */
  events: number;
  duplicates: number;
  /** Callbacks that ended (delivered or parked) with no final event at all: a status table would wait forever. */
  missingFinal: number;
  /** Final events for an outcome the callback never had (`delivered` never answered 2xx, `dead` never parked). */
  falseFinal: number;
  /** Delivered, yet the only final event says dead (a redelivery after a kill took another path). */
  disagreeing: number;
  examples: { id: string; problem: string }[];
}

/** The queue chaos binds to P.events for every event, durable like the events themselves. */
export const eventsQueue = (names: TopologyNames): string => `${names.exchange}.chaos-events`;

/** Declares the events queue (quorum, so a broker restart keeps it) and binds it to every event type. */
export async function bindEventsQueue(url: string, names: TopologyNames): Promise<void> {
  const connection = await amqplib.connect(url);
  try {
    const channel = await connection.createChannel();
    await channel.assertQueue(eventsQueue(names), { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    await channel.bindQueue(eventsQueue(names), names.eventsExchange, '#');
    await channel.close();
  } finally {
    await connection.close().catch(() => {});
  }
}

/** Reads every event once the workers are stopped, then deletes the queue: final event types per callback id. */
export async function drainEvents(
  url: string,
  names: TopologyNames,
): Promise<{ finals: Map<string, Finals>; events: number; duplicates: number }> {
  const connection = await amqplib.connect(url);
  const channel = await connection.createChannel();
  const queue = eventsQueue(names);
  const expected = (await channel.checkQueue(queue)).messageCount;
  const finals = new Map<string, Finals>();
  const seen = new Set<string>();
  let events = 0;
  let duplicates = 0;
  let lastAt = Date.now();
  await channel.prefetch(1_000);
  await channel.consume(queue, (message) => {
    if (!message) return;
    lastAt = Date.now();
    events += 1;
    const messageId = String(message.properties.messageId);
    if (seen.has(messageId)) duplicates += 1;
    seen.add(messageId);
    const event = JSON.parse(message.content.toString('utf8')) as { id: string; type: string };
    // A `canceled` callback is parked in P.dead like a `dead` one.
    if (event.type === 'delivered' || event.type === 'dead' || event.type === 'canceled') {
      const entry = finals.get(event.id) ?? { delivered: false, dead: false };
      entry[event.type === 'delivered' ? 'delivered' : 'dead'] = true;
      finals.set(event.id, entry);
    }
    channel.ack(message);
  });
  while (events < expected && Date.now() - lastAt < 5_000) await sleep(100);
  await channel.deleteQueue(queue);
  await channel.close();
  await connection.close();
  return { finals, events, duplicates };
}

/** Holds the events read against what the receiver and P.dead saw of each callback of the run. */
export function judgeEvents(
  run: string,
  callbacks: number,
  byId: Map<string, Attempt[]>,
  dead: DeadEntry[],
  read: Awaited<ReturnType<typeof drainEvents>>,
): EventsVerdict {
  const parked = new Set(dead.map((entry) => entry.id));
  const verdict: EventsVerdict = {
    events: read.events,
    duplicates: read.duplicates,
    missingFinal: 0,
    falseFinal: 0,
    disagreeing: 0,
    examples: [],
  };
  const note = (id: string, problem: string): void => {
    if (verdict.examples.length < 20) verdict.examples.push({ id, problem });
  };
  for (let n = 0; n < callbacks; n += 1) {
    const id = idOf(run, n);
    const delivered = (byId.get(id) ?? []).some((a) => a.answered && a.status >= 200 && a.status < 300);
    const final = read.finals.get(id) ?? { delivered: false, dead: false };
    if ((delivered || parked.has(id)) && !final.delivered && !final.dead) {
      verdict.missingFinal += 1;
      note(id, `${delivered ? 'delivered' : 'parked'} without a final event`);
    }
    if ((final.delivered && !delivered) || (final.dead && !parked.has(id))) {
      verdict.falseFinal += 1;
      note(id, `final event ${final.delivered ? 'delivered' : 'dead'} for an outcome it never had`);
    }
    if (delivered && !final.delivered && final.dead) verdict.disagreeing += 1;
  }
  return verdict;
}
