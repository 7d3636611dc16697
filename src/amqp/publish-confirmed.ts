import type { ConfirmChannel, Message, Options } from 'amqplib';
import { RelayError } from '../errors.js';
import { isClientRefusal } from './broker-errors.js';
import { HEADER, readString } from '../message/headers.js';
import { withTimeout } from '../util/with-timeout.js';

/**
 * On every `mandatory` publish: a token unique to it, which the broker sends back with a return, so
 * the return is matched to its publish exactly, never by message text or id (several copies of one
 * callback can be in flight on one channel).
 */
export const RETURN_TOKEN_HEADER = HEADER.copy;

/** Where a message goes. */
export interface PublishTarget {
  exchange: string;
  routingKey: string;
}

/** What one confirm channel has told us: tokens of publishes under way, those returned, and whether it closed. */
interface ChannelWatch {
  pending: Set<string>;
  returned: Set<string>;
  closed: boolean;
}

const watches = new WeakMap<ConfirmChannel, ChannelWatch>();
let tokens = 0;

/** One listener per channel collects returns and its close. */
function watch(channel: ConfirmChannel): ChannelWatch {
  let watched = watches.get(channel);
  if (!watched) {
    const state: ChannelWatch = { pending: new Set(), returned: new Set(), closed: false };
    channel.on('return', (message: Message) => {
      const token = tokenOf(message.properties.headers);
      if (token !== undefined && state.pending.has(token)) state.returned.add(token);
    });
    channel.on('close', () => (state.closed = true));
    watches.set(channel, state);
    watched = state;
  }
  return watched;
}

const tokenOf = (headers: Record<string, unknown> | undefined): string | undefined => readString(headers, RETURN_TOKEN_HEADER);

/** A fresh token for RETURN_TOKEN_HEADER, for callers that size the headers before publishing. */
export const returnToken = (): string => `${process.pid}.${(tokens += 1)}`;

/** Whether `channel` is known to be closed (a publish or settle on it can only fail). */
export const isClosed = (channel: ConfirmChannel): boolean => watch(channel).closed;

/**
 * Publishes on a confirm channel and resolves once the broker has stored the message: confirmed
 * and, for a `mandatory` publish, not returned. Callers ack an original only after this resolves,
 * so an interruption can duplicate a callback but never lose one. Rejects with a RelayError:
 * - `CR_ERR_PUBLISH_RETURNED`: no queue took a mandatory message. The broker confirms an
 *   unroutable message too, but sends basic.return first on the same channel, so the return is known
 *   when the confirm arrives: https://www.rabbitmq.com/docs/confirms#when-publishes-are-confirmed
 * - `CR_ERR_PUBLISH_NACKED`: a negative confirm (e.g. a queue at its max-length with `reject-publish`);
 * - `CR_ERR_CLOSED`: the channel closed (or was closing: the client refused the publish) before the confirm;
 * - `CR_ERR_PUBLISH_TIMEOUT`: no confirm within `timeoutMs`.
 * The client's own refusal (e.g. headers it cannot encode on a live channel) is rethrown as it is.
 * A mandatory publish carries RETURN_TOKEN_HEADER: `token` when the caller made one (from
 * returnToken(), to size its headers with it), else a fresh one, never one the message brought along.
 */
export async function publishConfirmed(channel: ConfirmChannel, target: PublishTarget, content: Buffer, options: Options.Publish, timeoutMs: number, token?: string): Promise<void> {
  const watched = watch(channel);
  // Only a mandatory publish can come back; a caller's token is honoured either way.
  const tracked = options.mandatory === true || token !== undefined;
  const returnedAs = tracked ? (token ?? returnToken()) : undefined;
  const sent = returnedAs === undefined ? options : { ...options, headers: { ...options.headers, [RETURN_TOKEN_HEADER]: returnedAs } };
  const where = `exchange "${target.exchange}" with routing key "${target.routingKey}"`;
  if (returnedAs !== undefined) watched.pending.add(returnedAs);
  try {
    const confirmed = new Promise<Error | null>((resolve, reject) => {
      try {
        channel.publish(target.exchange, target.routingKey, content, sent, (error) => resolve(error ?? null));
      } catch (error) {
        reject(error as Error);
      }
    });
    let nack: Error | null;
    try {
      nack = await withTimeout(confirmed, timeoutMs, () => new RelayError('CR_ERR_PUBLISH_TIMEOUT', `no confirm from the broker within ${timeoutMs} ms (PUBLISH_TIMEOUT)`));
    } catch (error) {
      if (!(error instanceof RelayError) && (watched.closed || isClientRefusal(error))) throw closedError(where, error);
      throw error;
    }
    if (returnedAs !== undefined && watched.returned.has(returnedAs)) throw new RelayError('CR_ERR_PUBLISH_RETURNED', `the broker returned the message as unroutable: no queue is bound to ${where}`);
    // amqplib fails the unconfirmed publishes of a closing channel with the same callback as a nack.
    if (nack) throw watched.closed ? closedError(where, nack) : new RelayError('CR_ERR_PUBLISH_NACKED', `the broker refused the message for ${where} (negative confirm)`, { cause: nack });
  } finally {
    if (returnedAs !== undefined) {
      watched.pending.delete(returnedAs);
      watched.returned.delete(returnedAs);
    }
  }
}

const closedError = (where: string, cause: unknown): RelayError =>
  new RelayError('CR_ERR_CLOSED', `the channel closed before the broker confirmed the message for ${where}`, { cause });
