import type { Channel } from 'amqplib';

/** One step of a topology, as data: what to declare on the broker. */
export type Declaration =
  | { kind: 'exchange'; name: string; type: string; arguments?: Record<string, unknown> }
  | { kind: 'queue'; name: string; arguments: Record<string, unknown> }
  | { kind: 'binding'; queue: string; exchange: string; key: string };

/** Every exchange and queue the relay declares is durable: they outlive a broker restart. */
export const exchange = (name: string, type: string, args?: Record<string, unknown>): Declaration => ({ kind: 'exchange', name, type, ...(args && { arguments: args }) });
export const queue = (name: string, args: Record<string, unknown>): Declaration => ({ kind: 'queue', name, arguments: args });
export const binding = (queueName: string, exchangeName: string, key: string): Declaration => ({ kind: 'binding', queue: queueName, exchange: exchangeName, key });

/** Declares each step in order, idempotently (a declaration equal to what exists is a no-op). */
export async function applyDeclarations(channel: Channel, declarations: readonly Declaration[]): Promise<void> {
  for (const step of declarations) {
    switch (step.kind) {
      case 'exchange':
        await channel.assertExchange(step.name, step.type, { durable: true, ...(step.arguments && { arguments: step.arguments }) });
        break;
      case 'queue':
        await channel.assertQueue(step.name, { durable: true, arguments: step.arguments });
        break;
      case 'binding':
        await channel.bindQueue(step.queue, step.exchange, step.key);
        break;
    }
  }
}

/** The queues and exchanges of `declarations`, each once, in order of first declaration. */
export function declaredNames(declarations: readonly Declaration[]): { queues: string[]; exchanges: string[] } {
  const queues = new Set<string>();
  const exchanges = new Set<string>();
  for (const step of declarations) {
    if (step.kind === 'queue') queues.add(step.name);
    if (step.kind === 'exchange') exchanges.add(step.name);
  }
  return { queues: [...queues], exchanges: [...exchanges] };
}
