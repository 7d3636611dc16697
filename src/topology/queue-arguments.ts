/** What the connected broker supports, read from its server properties. */
export interface BrokerFeatures {
  version: string;
  /** Quorum queues with message TTL and at-least-once dead-lettering: RabbitMQ 3.10+. */
  quorumDeadLettering: boolean;
}

export function brokerFeatures(version: string): BrokerFeatures {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return { version, quorumDeadLettering: major > 3 || (major === 3 && minor >= 10) };
}

export interface QueueShape {
  type: 'quorum' | 'classic';
  /** Where expired or over-delivered messages go (exchange, routing key). */
  deadLetter?: { exchange: string; routingKey?: string };
  messageTtlMs?: number;
  /** Quorum only: deliveries before the broker dead-letters a message. */
  deliveryLimit?: number;
}

/**
 * `x-` arguments for a queue. Quorum queues that dead-letter use the at-least-once strategy, which
 * requires `reject-publish` overflow: https://www.rabbitmq.com/docs/quorum-queues#dead-lettering
 */
export function queueArguments(shape: QueueShape): Record<string, unknown> {
  const args: Record<string, unknown> = { 'x-queue-type': shape.type };
  if (shape.messageTtlMs !== undefined) args['x-message-ttl'] = shape.messageTtlMs;
  if (shape.deadLetter) {
    args['x-dead-letter-exchange'] = shape.deadLetter.exchange;
    if (shape.deadLetter.routingKey !== undefined) args['x-dead-letter-routing-key'] = shape.deadLetter.routingKey;
    if (shape.type === 'quorum') {
      args['x-dead-letter-strategy'] = 'at-least-once';
      args['x-overflow'] = 'reject-publish';
    }
  }
  if (shape.type === 'quorum' && shape.deliveryLimit !== undefined) args['x-delivery-limit'] = shape.deliveryLimit;
  return args;
}
