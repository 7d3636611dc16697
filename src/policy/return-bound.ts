/**
 * The bound on sending a message back to its queue. A worker that cannot settle a message (a hold
 * whose copy the broker will not store, a failure before a decision) gives it back to its own queue,
 * and the count of times it did so travels with the message (`x-callback-returns`). The broker's own
 * count is no brake: from RabbitMQ 4.3 an explicit requeue no longer counts toward a quorum queue's
 * delivery limit, and classic queues have none
 * (https://www.rabbitmq.com/docs/quorum-queues#poison-message-handling). So, past MAX_RETURNS, the
 * message is parked in P.dead as `unsettled` instead, and each return waits longer than the last.
 */

/** Returns to its own queue before a message is parked as `unsettled`. */
export const MAX_RETURNS = 5;

/** The first return's wait; each next one waits twice as long, at most MAX_RETURN_DELAY_MS. */
export const FIRST_RETURN_DELAY_MS = 1_000;
export const MAX_RETURN_DELAY_MS = 16_000;

export type ReturnStep =
  /** Wait `delayMs` holding the message, then put a copy with `returns` back in its queue. */
  | { kind: 'return'; returns: number; delayMs: number }
  /** Came back too often: park it in P.dead as `unsettled`, after `returns - 1` returns. */
  | { kind: 'park'; returns: number };

/** What to do with a message that could not be settled and was sent back `returnsSoFar` times already. */
export function nextReturn(returnsSoFar: number): ReturnStep {
  const returns = returnsSoFar + 1;
  if (returns > MAX_RETURNS) return { kind: 'park', returns };
  return { kind: 'return', returns, delayMs: Math.min(FIRST_RETURN_DELAY_MS * 2 ** (returns - 1), MAX_RETURN_DELAY_MS) };
}
