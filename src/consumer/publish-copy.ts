import type { ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import { isRelayError, RelayError } from '../errors.js';
import { AMQP_HEADER_TABLE_LIMIT, headerTableSize } from '../message/header-table-size.js';
import { HEADER, readString } from '../message/headers.js';
import { withTimeout } from '../util/with-timeout.js';

/** A copy of a consumed message to publish: where, with which headers. */
export interface Copy {
  exchange: string;
  routingKey: string;
  headers: Record<string, unknown>;
  /** Ask the broker to return the copy when no queue takes it. */
  mandatory: boolean;
}

/**
 * Why a copy was not stored: the broker returned it (no queue bound for it) or nacked it (e.g. a
 * queue at a max-length with `reject-publish`); no confirm came in time; its headers cannot be
 * encoded; the client refused it; or the channel closed.
 */
export type CopyFailure = 'returned' | 'nacked' | 'timeout' | 'too-large' | 'refused' | 'closed';

export type CopyResult = { stored: true } | { stored: false; cause: CopyFailure; error: Error };

/** What one confirm channel has told us: copies the broker returned, and whether it closed. */
interface ChannelWatch {
  pending: Set<string>;
  returned: Set<string>;
  closed: boolean;
}

const watches = new WeakMap<ConfirmChannel, ChannelWatch>();
let copies = 0;

/**
 * One listener per channel collects returns. A return is matched to its publish by the token in the
 * copy's `x-callback-copy` header, never by message text or id (several copies of one callback can be
 * in flight). The broker sends basic.return before the confirm of the same publish, so by the time
 * the confirm arrives the return has been seen: https://www.rabbitmq.com/docs/confirms#when-publishes-are-confirmed
 */
function watch(channel: ConfirmChannel): ChannelWatch {
  let watched = watches.get(channel);
  if (!watched) {
    const state: ChannelWatch = { pending: new Set(), returned: new Set(), closed: false };
    channel.on('return', (message: ConsumeMessage) => {
      const token = readString(message.properties.headers, HEADER.copy);
      if (token !== undefined && state.pending.has(token)) state.returned.add(token);
    });
    channel.on('close', () => (state.closed = true));
    watches.set(channel, state);
    watched = state;
  }
  return watched;
}

/** Whether `channel` is known to be closed (a publish or settle on it can only fail). */
export const isClosed = (channel: ConfirmChannel): boolean => watch(channel).closed;

/**
 * Publishes `copy` with the original's body and id and waits for the broker to store it: confirmed,
 * not returned, within `timeoutMs`. Never rejects; a failure comes back with its cause.
 */
export async function publishCopy(channel: ConfirmChannel, copy: Copy, message: ConsumeMessage, id: string, timeoutMs: number): Promise<CopyResult> {
  const watched = watch(channel);
  copies += 1;
  const token = `${process.pid}.${copies}`;
  const headers = { ...copy.headers, [HEADER.copy]: token };
  const size = headerTableSize(headers);
  if (size > AMQP_HEADER_TABLE_LIMIT) {
    return { stored: false, cause: 'too-large', error: new Error(`the copy's headers are ${size} bytes encoded, over the ${AMQP_HEADER_TABLE_LIMIT} the client can send`) };
  }
  const { contentType, timestamp } = message.properties;
  const options: Options.Publish = { persistent: true, mandatory: copy.mandatory, messageId: id, contentType: contentType ?? 'application/json', headers };
  if (timestamp !== undefined) options.timestamp = timestamp;
  watched.pending.add(token);
  try {
    const error = await publishConfirmed(channel, copy.exchange, copy.routingKey, message.content, options, timeoutMs);
    if (watched.returned.has(token)) return { stored: false, cause: 'returned', error: new Error(`no queue is bound for routing key "${copy.routingKey}" on exchange "${copy.exchange}"`) };
    if (error) return { stored: false, cause: watched.closed ? 'closed' : 'nacked', error };
    return { stored: true };
  } catch (error) {
    if (isRelayError(error, 'CR_ERR_PUBLISH_TIMEOUT')) return { stored: false, cause: 'timeout', error };
    return { stored: false, cause: watched.closed ? 'closed' : 'refused', error: error as Error };
  } finally {
    watched.pending.delete(token);
    watched.returned.delete(token);
  }
}

/**
 * Publishes and waits for the broker's confirm: resolves with the nack's error (null when acked);
 * rejects when the client refuses the publish or, with `CR_ERR_PUBLISH_TIMEOUT`, after `timeoutMs`.
 */
export function publishConfirmed(channel: ConfirmChannel, exchange: string, routingKey: string, content: Buffer, options: Options.Publish, timeoutMs: number): Promise<Error | null> {
  const confirmed = new Promise<Error | null>((resolve, reject) => {
    try {
      channel.publish(exchange, routingKey, content, options, (error) => resolve(error ?? null));
    } catch (error) {
      reject(error as Error);
    }
  });
  return withTimeout(confirmed, timeoutMs, () => new RelayError('CR_ERR_PUBLISH_TIMEOUT', `no confirm from the broker within ${timeoutMs} ms (PUBLISH_TIMEOUT)`));
}
