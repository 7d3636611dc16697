import type { ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import { isClosed, publishConfirmed, RETURN_TOKEN_HEADER, returnToken, type ConfirmWait } from '../amqp/publish-confirmed.js';
import { isRelayError, type RelayErrorCode } from '../errors.js';
import { AMQP_HEADER_TABLE_LIMIT, headerTableSize } from '../message/header-table-size.js';
import type { CopyFailure } from '../reports.js';

/** A copy of a consumed message to publish: where, with which headers. */
export interface Copy {
  exchange: string;
  routingKey: string;
  headers: Record<string, unknown>;
  /** Ask the broker to return the copy when no queue takes it. */
  mandatory: boolean;
}

export type { CopyFailure };

export type CopyResult = { stored: true } | { stored: false; cause: CopyFailure; error: Error };

const CAUSES: Partial<Record<RelayErrorCode, CopyFailure>> = {
  CR_ERR_PUBLISH_RETURNED: 'returned',
  CR_ERR_PUBLISH_NACKED: 'nacked',
  CR_ERR_PUBLISH_TIMEOUT: 'timeout',
  CR_ERR_CLOSED: 'closed',
};

/** Waits for a confirmed publish (amqp/publish-confirmed.ts) and tells how it ended. Never rejects. */
export async function copyResult(channel: ConfirmChannel, published: Promise<void>): Promise<CopyResult> {
  try {
    await published;
    return { stored: true };
  } catch (error) {
    const cause = (isRelayError(error) && CAUSES[error.code]) || (isClosed(channel) ? 'closed' : 'refused');
    return { stored: false, cause, error: error as Error };
  }
}

/**
 * Publishes `copy` with the original's body and id and waits for the broker to store it: confirmed,
 * not returned, as `wait` says (within a timeout, or until the outcome is definite: ConfirmWait).
 * Every copy carries a return token (RETURN_TOKEN_HEADER), counted in its header size. Never
 * rejects; a failure comes back with its cause.
 */
export async function publishCopy(
  channel: ConfirmChannel,
  copy: Copy,
  message: ConsumeMessage,
  id: string | undefined,
  wait: ConfirmWait,
): Promise<CopyResult> {
  const token = returnToken();
  const headers = { ...copy.headers, [RETURN_TOKEN_HEADER]: token };
  const size = headerTableSize(headers);
  if (size > AMQP_HEADER_TABLE_LIMIT) {
    return {
      stored: false,
      cause: 'too-large',
      error: new Error(`the copy's headers are ${size} bytes encoded, over the ${AMQP_HEADER_TABLE_LIMIT} the client can send`),
    };
  }
  const { contentType, timestamp } = message.properties;
  const options: Options.Publish = { persistent: true, mandatory: copy.mandatory, contentType: contentType ?? 'application/json', headers };
  if (id !== undefined) options.messageId = id;
  if (timestamp !== undefined) options.timestamp = timestamp;
  return copyResult(channel, publishConfirmed(channel, copy, message.content, options, wait, token));
}
