import { describe, expect, it } from 'vitest';
import { amqpSocket, createWriteCoalescer, type CorkableStream } from '../../../src/producer/coalesce-writes.js';

/** A socket that records cork/uncork, and a write queued the way amqplib's mux queues one. */
function fakeSocket() {
  const events: string[] = [];
  let depth = 0;
  const socket: CorkableStream & { destroyed: boolean } = {
    destroyed: false,
    cork: () => void ((depth += 1), events.push('cork')),
    uncork: () => void ((depth -= 1), events.push('uncork')),
  };
  // amqplib: the first publish of a turn queues a nextTick, which schedules the setImmediate that writes all queued ones.
  let queued: string[] = [];
  const publish = (name: string): void => {
    queued.push(name);
    if (queued.length > 1) return;
    process.nextTick(() =>
      setImmediate(() => {
        for (const each of queued) events.push(`write ${each} (corked: ${depth > 0})`);
        queued = [];
      }),
    );
  };
  return { socket, events, publish };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(() => setImmediate(resolve)));

describe('createWriteCoalescer', () => {
  it('corks once per turn and uncorks right after the writes of that turn', async () => {
    const { socket, events, publish } = fakeSocket();
    const hold = createWriteCoalescer(() => socket);
    for (const name of ['a', 'b', 'c']) {
      publish(name);
      hold();
    }
    await turn();
    expect(events).toEqual(['cork', 'write a (corked: true)', 'write b (corked: true)', 'write c (corked: true)', 'uncork']);
    publish('d');
    hold();
    await turn();
    expect(events.slice(5)).toEqual(['cork', 'write d (corked: true)', 'uncork']);
  });

  it('leaves a socket alone while there is none, and never uncorks a destroyed one', async () => {
    let current: (CorkableStream & { destroyed: boolean }) | undefined;
    const hold = createWriteCoalescer(() => current);
    hold();
    const { socket, events } = fakeSocket();
    current = socket;
    hold();
    socket.destroyed = true;
    await turn();
    expect(events).toEqual(['cork']);
    hold();
    expect(events).toEqual(['cork']);
  });
});

describe('amqpSocket', () => {
  it('finds amqplib’s socket under amqp-connection-manager’s connection, else nothing', () => {
    const { socket } = fakeSocket();
    expect(amqpSocket({ connection: { connection: { stream: socket } } })).toBe(socket);
    expect(amqpSocket({ connection: undefined })).toBeUndefined();
    expect(amqpSocket({ connection: { connection: { stream: {} } } })).toBeUndefined();
  });
});
