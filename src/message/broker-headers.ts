/**
 * Headers the broker writes into a message as it routes, dead-letters and delivers it: the
 * dead-letter history (https://www.rabbitmq.com/docs/dlx#effects) and the quorum queues' delivery
 * counters, `x-delivery-count` (failed deliveries) and, from RabbitMQ 4.0, `x-acquired-count` (every
 * delivery, https://www.rabbitmq.com/docs/quorum-queues#poison-message-handling). They describe one
 * copy's journey: a copy we publish ourselves starts without them, or they would pile up with every
 * retry and a fresh copy would look delivered many times. They change between deliveries of one
 * message too, so nothing derived from a message's headers (such as its id) may read them.
 */
export const BROKER_HEADERS: readonly string[] = [
  'x-death',
  'x-first-death-exchange',
  'x-first-death-queue',
  'x-first-death-reason',
  'x-last-death-exchange',
  'x-last-death-queue',
  'x-last-death-reason',
  'x-delivery-count',
  'x-acquired-count',
];

const brokerHeaders = new Set(BROKER_HEADERS);

/** Whether the broker wrote this header (names compared as the broker writes them, lower case). */
export const isBrokerHeader = (name: string): boolean => brokerHeaders.has(name.toLowerCase());

/** The headers without those the broker wrote and those `drop` names; a new object, the input untouched. */
export function withoutBrokerHeaders(
  headers: Record<string, unknown> | undefined,
  drop: (name: string) => boolean = () => false,
): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!isBrokerHeader(name) && !drop(name)) kept[name] = value;
  }
  return kept;
}
