/*
 * Whether a topology is in place already, so that a worker's start, or a publisher's first connect,
 * need not declare it again. Declaring what exists changes none of the broker's data, but it is work:
 * on RabbitMQ 4.x each binding declared is a metadata-store transaction (docs/operations.md has the
 * figures), where reading a few names is a fraction of it.
 *
 * Two exchanges nothing is published to say it: P.declared.digest, whose `alternate-exchange` argument
 * is a digest of the declare list last declared in full, and P.declared, which exists only while that
 * declaration is complete. Every full declaration deletes P.declared before its first step, and makes
 * it again only after its last one and after P.declared.digest holds its own digest: a declaration cut
 * short leaves no P.declared. A reader reads P.declared before and after it compares the digest, so a
 * declaration that began in between is seen (the comparison itself is a declaration that may make
 * P.declared.digest, never P.declared). Another version's list, or other settings (LANES, QUEUE_TYPE,
 * HISTORY, …), have another digest. A queue or an exchange deleted since (its bindings go with it) is
 * missing by name. What this cannot see is a binding removed by hand with its queue and exchange still
 * there: `npm run topology` declares the whole list, whatever the markers say.
 */
import { createHash } from 'node:crypto';
import type { Channel } from 'amqplib';
import { declaredNames, type Declaration, type OpenChannel } from './declare-list.js';

/** The two marker exchanges of a prefix. */
export interface Markers {
  /** Exists while the list of `digest` is declared in full. */
  complete: string;
  /** Its `alternate-exchange` argument is the digest of the list declared last. */
  digest: string;
}

/**
 * The digest of a declare list: its declarations in order, arguments included. `alternate-exchange`
 * is an argument the broker compares when an exchange is declared again (no other one is), so a
 * declaration with another digest is refused (406 PRECONDITION_FAILED): https://www.rabbitmq.com/docs/ae
 */
export function listDigest(declarations: readonly Declaration[]): string {
  return createHash('sha256').update(JSON.stringify(declarations)).digest('hex').slice(0, 32);
}

const digestOptions = (declarations: readonly Declaration[]) => ({ durable: true, arguments: { 'alternate-exchange': `declared-list.${listDigest(declarations)}` } });

/**
 * True when `declarations` were declared in full, nothing has begun to declare them again since, and
 * every queue and exchange of the list still exists; false otherwise, or on any error (a missing name
 * or another digest closes the channel; a broker that went away): the caller then declares the list.
 */
export function declaredAlready(openChannel: OpenChannel, markers: Markers, declarations: readonly Declaration[]): Promise<boolean> {
  return onChannelOfItsOwn(openChannel, false, async (channel) => {
    await channel.checkExchange(markers.complete);
    await channel.assertExchange(markers.digest, 'fanout', digestOptions(declarations));
    await channel.checkExchange(markers.complete);
    const { queues, exchanges } = declaredNames(declarations);
    await Promise.all([...queues.map((name) => channel.checkQueue(name)), ...exchanges.map((name) => channel.checkExchange(name))]);
    return true;
  });
}

/**
 * Before a full declaration, on the channel that makes it: no longer complete. Deleting an exchange
 * that does not exist is no error, so this never closes the channel.
 */
export async function unmarkDeclared(channel: Channel, markers: Markers): Promise<void> {
  await channel.deleteExchange(markers.complete);
}

/**
 * After a full declaration of `declarations`: its digest, then P.declared. Refused (another process
 * wrote another digest in between, or may not configure these names), it leaves P.declared absent, and
 * `onFailure` hears why; the next start then declares the list again.
 */
export function markDeclared(openChannel: OpenChannel, markers: Markers, declarations: readonly Declaration[], onFailure: (error: unknown) => void): Promise<void> {
  return onChannelOfItsOwn(
    openChannel,
    undefined,
    async (channel) => {
      await channel.deleteExchange(markers.digest);
      await channel.assertExchange(markers.digest, 'fanout', digestOptions(declarations));
      await channel.assertExchange(markers.complete, 'fanout', { durable: true });
    },
    onFailure,
  );
}

/** Runs `use` on a channel of its own, closed after; `otherwise` on any error (a refusal closes the channel). */
async function onChannelOfItsOwn<T>(openChannel: OpenChannel, otherwise: T, use: (channel: Channel) => Promise<T>, onFailure?: (error: unknown) => void): Promise<T> {
  let channel: Channel | undefined;
  try {
    channel = await openChannel();
    return await use(channel);
  } catch (error) {
    onFailure?.(error);
    return otherwise;
  } finally {
    await channel?.close().catch(() => {});
  }
}
