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

/** Channels that declare bindings side by side when a topology is first created (see applyDeclarations). */
export const BINDING_CHANNELS = 8;

/** Opens another channel on the same connection, for declaring bindings in parallel. */
export type OpenChannel = () => Promise<Channel>;

/**
 * Declares every step, idempotently (a declaration equal to what exists is a no-op). Without
 * `openChannel`, one at a time in list order. With it, the exchanges and queues first, in order, then
 * the bindings spread over BINDING_CHANNELS channels: a binding is a broker transaction of a few
 * milliseconds, each channel is served by a broker process of its own, and queues mode makes some
 * 800 of them, so a first declaration takes a fraction of the time (measured: 7.5 s → 1.7 s for
 * 1,600 bindings on a loaded 2-core machine).
 */
export async function applyDeclarations(channel: Channel, declarations: readonly Declaration[], openChannel?: OpenChannel): Promise<void> {
  if (!openChannel) {
    for (const step of declarations) await declare(channel, step);
    return;
  }
  const bindings = declarations.filter((step) => step.kind === 'binding');
  for (const step of declarations) if (step.kind !== 'binding') await declare(channel, step);
  const extra = await Promise.all(Array.from({ length: BINDING_CHANNELS - 1 }, openChannel));
  try {
    const channels = [channel, ...extra];
    await Promise.all(channels.map(async (ch, i) => {
      for (let k = i; k < bindings.length; k += channels.length) await declare(ch, bindings[k] as Declaration);
    }));
  } finally {
    await Promise.all(extra.map((ch) => ch.close().catch(() => {})));
  }
}

function declare(channel: Channel, step: Declaration): Promise<unknown> {
  switch (step.kind) {
    case 'exchange':
      return channel.assertExchange(step.name, step.type, { durable: true, ...(step.arguments && { arguments: step.arguments }) });
    case 'queue':
      return channel.assertQueue(step.name, { durable: true, arguments: step.arguments });
    case 'binding':
      return channel.bindQueue(step.queue, step.exchange, step.key);
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
