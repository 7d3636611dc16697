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
  /** Every return the channel has seen, matched or not: a caller's only publish in flight needs no token. */
  returns: number;
  closed: boolean;
}

const watches = new WeakMap<ConfirmChannel, ChannelWatch>();
let tokens = 0;

/** One listener per channel collects returns and its close. */
function watch(channel: ConfirmChannel): ChannelWatch {
  let watched = watches.get(channel);
  if (!watched) {
    const state: ChannelWatch = { pending: new Set(), returned: new Set(), returns: 0, closed: false };
    channel.on('return', (message: Message) => {
      state.returns += 1;
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
 * How a publish waits for its confirm: at most `timeoutMs` (then `CR_ERR_PUBLISH_TIMEOUT`), or until
 * the outcome is definite (confirm, negative confirm, return or channel close), telling `onSlow` once
 * `slowAfterMs` passed without one. A confirm that is late is not an answer: the message may be
 * stored, so a caller that must not act twice on one message waits (a blocked connection
 * confirms once the alarm clears: https://www.rabbitmq.com/docs/connection-blocked).
 */
export type ConfirmWait = number | { slowAfterMs: number; onSlow: (error: RelayError) => void };

/**
 * How a mandatory publish is matched to its return: a token in RETURN_TOKEN_HEADER (`token` when the
 * caller made one from returnToken(), to size its headers with it, else a fresh one), or `'serial'`:
 * the caller never has another publish in flight on this channel, so any return that arrives before
 * the confirm is this publish's (the broker sends basic.return before the basic.ack of the same
 * message). Serial leaves no header of ours on the stored message.
 */
export type ReturnMatch = string | 'serial' | undefined;

/**
 * Publishes on a confirm channel and resolves once the broker has stored the message: confirmed
 * and, for a `mandatory` publish, not returned. Callers ack an original only after this resolves,
 * so an interruption can duplicate a callback but never lose one. Rejects with a RelayError:
 * - `CR_ERR_PUBLISH_RETURNED`: no queue took a mandatory message. The broker confirms an
 *   unroutable message too, but sends basic.return first on the same channel, so the return is known
 *   when the confirm arrives: https://www.rabbitmq.com/docs/confirms#when-publishes-are-confirmed
 * - `CR_ERR_PUBLISH_NACKED`: a negative confirm (e.g. a queue at its max-length with `reject-publish`);
 * - `CR_ERR_CLOSED`: the channel closed (or was closing: the client refused the publish) before the confirm;
 * - `CR_ERR_PUBLISH_TIMEOUT`: no confirm within `wait` ms (only when `wait` is a number: see ConfirmWait).
 * The client's own refusal (e.g. headers it cannot encode on a live channel) is rethrown as it is.
 * A mandatory publish is matched to its return as `match` says (ReturnMatch), never by a token the
 * message brought along.
 */
export async function publishConfirmed(
  channel: ConfirmChannel,
  target: PublishTarget,
  content: Buffer,
  options: Options.Publish,
  wait: ConfirmWait,
  match?: ReturnMatch,
): Promise<void> {
  const watched = watch(channel);
  const serial = match === 'serial';
  // Only a mandatory publish can come back; a caller's token is honoured either way.
  const tracked = !serial && (options.mandatory === true || match !== undefined);
  const returnedAs = tracked ? (match ?? returnToken()) : undefined;
  const sent = returnedAs === undefined ? options : { ...options, headers: { ...options.headers, [RETURN_TOKEN_HEADER]: returnedAs } };
  const where = `exchange "${target.exchange}" with routing key "${target.routingKey}"`;
  const returnsBefore = watched.returns;
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
      nack = await waitFor(confirmed, wait);
    } catch (error) {
      if (!(error instanceof RelayError) && (watched.closed || isClientRefusal(error))) throw closedError(where, error);
      throw error;
    }
    const returned =
      returnedAs !== undefined ? watched.returned.has(returnedAs) : serial && options.mandatory === true && watched.returns > returnsBefore;
    if (returned)
      throw new RelayError('CR_ERR_PUBLISH_RETURNED', `the broker returned the message as unroutable: no queue is bound to ${where}`);
    // amqplib fails the unconfirmed publishes of a closing channel with the same callback as a nack.
    if (nack)
      throw watched.closed
        ? closedError(where, nack)
        : new RelayError('CR_ERR_PUBLISH_NACKED', `the broker refused the message for ${where} (negative confirm)`, { cause: nack });
  } finally {
    if (returnedAs !== undefined) {
      watched.pending.delete(returnedAs);
      watched.returned.delete(returnedAs);
    }
  }
}

function timeoutError(ms: number): RelayError {
  return new RelayError('CR_ERR_PUBLISH_TIMEOUT', `no confirm from the broker within ${ms} ms (PUBLISH_TIMEOUT)`);
}

/** The confirm, bounded by a timeout, or awaited to the end with a warning once it is slow. */
function waitFor(confirmed: Promise<Error | null>, wait: ConfirmWait): Promise<Error | null> {
  if (typeof wait === 'number') return withTimeout(confirmed, wait, () => timeoutError(wait));
  const slow = setTimeout(() => wait.onSlow(timeoutError(wait.slowAfterMs)), Math.max(0, wait.slowAfterMs));
  slow.unref();
  return confirmed.finally(() => clearTimeout(slow));
}

const closedError = (where: string, cause: unknown): RelayError =>
  new RelayError('CR_ERR_CLOSED', `the channel closed before the broker confirmed the message for ${where}`, { cause });
