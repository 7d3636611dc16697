import { EventEmitter } from 'node:events';
import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { createDueMover } from '../../../src/consumer/move-due.js';
import { createLogger } from '../../../src/logger.js';
import { topologyNames } from '../../../src/topology/topology-names.js';

// The broker cannot be made to hold a confirm back until a test says so: the mover's channel is a
// stand-in here. Moves against a real broker: the plugin-mode suites (test/integration).

class StandInChannel extends EventEmitter {
  log: string[] = [];
  /** Confirm callbacks of publishes the test answers itself. */
  pending: Array<(error: Error | null) => void> = [];
  deliver: ((message: ConsumeMessage | null) => void) | undefined;
  async assertExchange(): Promise<void> {}
  async assertQueue(): Promise<void> {}
  async bindQueue(): Promise<void> {}
  async prefetch(): Promise<void> {}
  async consume(_queue: string, onMessage: (message: ConsumeMessage | null) => void): Promise<{ consumerTag: string }> {
    this.deliver = onMessage;
    return { consumerTag: 'due' };
  }
  publish(_exchange: string, routingKey: string, _content: Buffer, _options: unknown, cb: (error: Error | null) => void): boolean {
    this.log.push(`publish ${routingKey}`);
    this.pending.push(cb);
    return true;
  }
  ack(): void {
    this.log.push('ack');
  }
  async close(): Promise<void> {
    this.log.push('close');
    for (const cb of this.pending.splice(0)) cb(new Error('channel closed'));
    this.emit('close');
  }
}

const due = (n: number | string): ConsumeMessage =>
  ({
    content: Buffer.from('{}'),
    fields: { routingKey: `due.${n}` },
    properties: { headers: {}, messageId: `m${n}` },
  }) as unknown as ConsumeMessage;

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000 && !condition(); i += 1) await new Promise((resolve) => setImmediate(resolve));
  if (!condition()) throw new Error('condition not met');
}

describe('the due mover (plugin mode)', () => {
  it('a close lets a move under way reach its ack before the channel closes; what arrives meanwhile stays unacked for the broker', async () => {
    const channel = new StandInChannel();
    const names = topologyNames('p');
    const mover = createDueMover(names, 10, createLogger('silent'));
    mover.attach({ createConfirmChannel: async () => channel as unknown as ConfirmChannel });
    await until(() => channel.deliver !== undefined);
    channel.deliver?.(due(3));
    // `due.3` goes on into lane bucket 3.
    expect(channel.log).toEqual([`publish ${names.routingKey}.3`]);
    const closed = mover.close();
    // A message delivered while closing is not moved: the channel's close puts it back in P.due.
    channel.deliver?.(due(4));
    await new Promise((resolve) => setImmediate(resolve));
    expect(channel.log).not.toContain('close');
    channel.pending.shift()?.(null);
    await closed;
    expect(channel.log).toEqual([`publish ${names.routingKey}.3`, 'ack', 'close']);
  });

  it('moves an ordered message (due.o<bucket>) on into its shard as ordered.<bucket>, confirmed before its ack', async () => {
    const channel = new StandInChannel();
    const mover = createDueMover(topologyNames('p'), 10, createLogger('silent'));
    mover.attach({ createConfirmChannel: async () => channel as unknown as ConfirmChannel });
    await until(() => channel.deliver !== undefined);
    channel.deliver?.(due('o7'));
    expect(channel.log).toEqual(['publish ordered.7']);
    channel.pending.shift()?.(null);
    await until(() => channel.log.includes('ack'));
    await mover.close();
    expect(channel.log).toEqual(['publish ordered.7', 'ack', 'close']);
  });
});
