/*
 * Whether a topology is in place already, so that a worker's start, or a publisher's first connect,
 * need not declare it again: a complete declaration leaves a marker, the exchange P.declared, whose
 * `alternate-exchange` argument is a digest of the declare list. Declaring what exists is a no-op for
 * the broker's data, not for its work: on RabbitMQ 4.x every binding declared is a metadata-store
 * transaction, so queues mode's 1,461 bindings took 0.6–0.7 s of an idle broker each time (1.6–3.3 s
 * with four workers starting at once), where reading the marker and the 100 queues and exchanges takes
 * about 0.05 s.
 *
 * The marker is made only after every declaration succeeded, and read back only with the same digest:
 * a start cut short, another version's list or other settings (LANES, QUEUE_TYPE, …) leave no marker
 * that matches, and the list is declared in full. A queue or an exchange deleted since (its bindings go
 * with it) is found missing by name, and the list is declared in full again. A binding alone removed by
 * hand is not seen: reconnects, a publish the broker returns as unroutable and `npm run topology`
 * declare the whole list, whatever the marker says.
 */
import { createHash } from 'node:crypto';
import type { Channel } from 'amqplib';
import { declaredNames, type Declaration, type OpenChannel } from './declare-list.js';

/**
 * The digest of a declare list: its declarations in order, arguments included. An exchange's
 * `alternate-exchange` argument is one the broker compares when the exchange is declared again
 * (any other is ignored), so a marker with another digest is refused with 406 PRECONDITION_FAILED:
 * https://www.rabbitmq.com/docs/ae
 */
export function listDigest(declarations: readonly Declaration[]): string {
  return createHash('sha256').update(JSON.stringify(declarations)).digest('hex').slice(0, 32);
}

const markerOptions = (digest: string) => ({ durable: true, arguments: { 'alternate-exchange': `declared-list.${digest}` } });

/**
 * True when the marker `marker` says `declarations` were all made, and every queue and exchange of the
 * list still exists; false otherwise, or on any error (a channel that a missing name closed, a broker
 * that went away): the caller then declares the list.
 */
export function declaredAlready(openChannel: OpenChannel, marker: string, declarations: readonly Declaration[]): Promise<boolean> {
  return onChannelOfItsOwn(openChannel, false, async (channel) => {
    // Passive first: an active declaration would make a marker that no complete declaration made.
    await channel.checkExchange(marker);
    await channel.assertExchange(marker, 'fanout', markerOptions(listDigest(declarations)));
    const { queues, exchanges } = declaredNames(declarations);
    // One round trip for all: the broker answers a channel's methods in order, the first 404 closes it.
    await Promise.all([...queues.map((name) => channel.checkQueue(name)), ...exchanges.map((name) => channel.checkExchange(name))]);
    return true;
  });
}

/**
 * Leaves the marker of a complete declaration of `declarations`: the one there (another digest, or
 * the same) is deleted first. Best effort: without a marker the next start declares the list again
 * (another process marking it with another digest in between, a broker that went away).
 */
export function markDeclared(openChannel: OpenChannel, marker: string, declarations: readonly Declaration[]): Promise<void> {
  return onChannelOfItsOwn(openChannel, undefined, async (channel) => {
    await channel.deleteExchange(marker);
    await channel.assertExchange(marker, 'fanout', markerOptions(listDigest(declarations)));
  });
}

/** Runs `use` on a channel of its own, closed after; `otherwise` on any error (a refusal closes the channel). */
async function onChannelOfItsOwn<T>(openChannel: OpenChannel, otherwise: T, use: (channel: Channel) => Promise<T>): Promise<T> {
  let channel: Channel | undefined;
  try {
    channel = await openChannel();
    channel.on('error', () => {});
    return await use(channel);
  } catch {
    return otherwise;
  } finally {
    await channel?.close().catch(() => {});
  }
}
