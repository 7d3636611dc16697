import { IllegalOperationError } from 'amqplib';
import { redactUrl } from '../config/redact-url.js';
import { RelayError } from '../errors.js';

/**
 * AMQP reply codes the relay acts on. amqplib puts the broker's reply code of a channel or
 * connection close in the error's `code`: https://www.rabbitmq.com/amqp-0-9-1-reference#constants
 */
export const REPLY = {
  /** A queue or exchange does not exist (passive declare, bind, get). */
  notFound: 404,
} as const;

/** The broker's reply code of a channel or connection error, if it is one. */
export function replyCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}

export const isNotFound = (error: unknown): boolean => replyCode(error) === REPLY.notFound;

/** amqplib refuses an operation on a channel or connection that is closed or closing (IllegalOperationError). */
export const isClientRefusal = (error: unknown): boolean => error instanceof IllegalOperationError;

/** `CR_ERR_BROKER_UNREACHABLE` for a failed connect to `url`; the text never carries its password. */
export function brokerUnreachable(url: string | undefined, cause: unknown): RelayError {
  if (url === undefined) return new RelayError('CR_ERR_BROKER_UNREACHABLE', 'AMQP_URL names no broker');
  const reason = scrub(String((cause as Error | undefined)?.message ?? cause), url);
  return new RelayError('CR_ERR_BROKER_UNREACHABLE', `cannot connect to the broker at ${redactUrl(url)}: ${reason}`, { cause });
}

/** The text with the URL, and its password on its own, replaced: a client error may quote either. */
function scrub(text: string, url: string): string {
  let clean = text.split(url).join(redactUrl(url));
  try {
    const password = decodeURIComponent(new URL(url).password);
    if (password.length > 0) clean = clean.split(password).join('***');
  } catch {
    // Not a parseable URL: the split above already removed it wherever it appeared whole.
  }
  return clean;
}
