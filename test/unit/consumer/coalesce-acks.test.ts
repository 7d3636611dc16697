import type { Channel, Message } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { coalesceAcks } from '../../../src/consumer/coalesce-acks.js';

type Frame = { kind: 'ack' | 'nack'; tag: number; multiple: boolean; requeue?: boolean };

/** A stand-in for amqplib's channel: records the frames its ack/nack would send. */
function fakeChannel() {
  const frames: Frame[] = [];
  let closed = false;
  const channel = {
    ack(message: Message, allUpTo = false) {
      if (closed) throw Object.assign(new Error('Channel closed'), { code: 'CLOSED' });
      frames.push({ kind: 'ack', tag: message.fields.deliveryTag, multiple: allUpTo });
    },
    nack(message: Message, allUpTo = false, requeue = true) {
      if (closed) throw Object.assign(new Error('Channel closed'), { code: 'CLOSED' });
      frames.push({ kind: 'nack', tag: message.fields.deliveryTag, multiple: allUpTo, requeue });
    },
    reject(message: Message, requeue = true) {
      this.nack(message, false, requeue);
    },
  };
  const turns: Array<() => void> = [];
  const acks = coalesceAcks(
    channel as unknown as Channel,
    () => closed,
    (flush) => void turns.push(flush),
  );
  return {
    channel: channel as unknown as Channel,
    frames,
    acks,
    close: () => (closed = true),
    /** The broker delivers these tags on the channel. */
    deliver: (...tags: number[]) => tags.forEach((tag) => acks.delivered(tag)),
    /** Ends the event loop's turn: runs the scheduled flushes. */
    endTurn: () => turns.splice(0).forEach((flush) => flush()),
  };
}

const msg = (tag: number): Message => ({ fields: { deliveryTag: tag } }) as unknown as Message;

describe('coalesceAcks', () => {
  it('sends a turn of in-order acks as one multiple ack, and nothing before the turn ends', () => {
    const { channel, frames, endTurn, deliver } = fakeChannel();
    deliver(1, 2, 3, 4, 5, 6, 7, 8);
    for (const tag of [1, 2, 3, 4]) channel.ack(msg(tag));
    expect(frames).toEqual([]);
    endTurn();
    expect(frames).toEqual([{ kind: 'ack', tag: 4, multiple: true }]);
  });

  it('counts what the channel holds unsettled: delivered, less what was acked, nacked or rejected', () => {
    const { channel, acks, deliver } = fakeChannel();
    deliver(1, 2, 3, 4, 5);
    expect(acks.unsettled()).toBe(5);
    channel.ack(msg(2));
    channel.nack(msg(4), false, false);
    channel.reject(msg(5));
    expect(acks.unsettled()).toBe(2);
    channel.ack(msg(3), true);
    expect(acks.unsettled()).toBe(0);
  });

  it('acks out-of-order tags one by one while an older tag is unsettled, then covers the run once it is', () => {
    const { channel, frames, endTurn, deliver } = fakeChannel();
    deliver(1, 2, 3, 4, 5, 6, 7, 8);
    channel.ack(msg(2));
    channel.ack(msg(3));
    endTurn();
    expect(frames).toEqual([
      { kind: 'ack', tag: 2, multiple: false },
      { kind: 'ack', tag: 3, multiple: false },
    ]);
    frames.length = 0;
    channel.ack(msg(1));
    channel.ack(msg(5));
    endTurn();
    // 1 completes the run 1–3 (2 and 3 already acked); 5 waits for 4, so it goes alone.
    expect(frames).toEqual([
      { kind: 'ack', tag: 1, multiple: true },
      { kind: 'ack', tag: 5, multiple: false },
    ]);
    frames.length = 0;
    channel.ack(msg(4));
    channel.ack(msg(6));
    endTurn();
    expect(frames).toEqual([{ kind: 'ack', tag: 6, multiple: true }]);
  });

  it('never lets a multiple ack cover a message still held: a nacked tag counts as settled, a held one does not', () => {
    const { channel, frames, endTurn, deliver } = fakeChannel();
    deliver(1, 2, 3, 4, 5, 6, 7, 8);
    channel.nack(msg(1), false, false);
    expect(frames).toEqual([{ kind: 'nack', tag: 1, multiple: false, requeue: false }]);
    channel.ack(msg(2));
    channel.ack(msg(4));
    endTurn();
    // 3 is still held by the worker: 4 is acked alone.
    expect(frames.slice(1)).toEqual([
      { kind: 'ack', tag: 2, multiple: true },
      { kind: 'ack', tag: 4, multiple: false },
    ]);
    frames.length = 0;
    channel.reject(msg(3), true);
    channel.ack(msg(5));
    endTurn();
    expect(frames).toEqual([
      { kind: 'nack', tag: 3, multiple: false, requeue: true },
      { kind: 'ack', tag: 5, multiple: true },
    ]);
  });

  it('flush sends the gathered acks at once (a stop, before the connection closes)', () => {
    const { channel, frames, acks, endTurn, deliver } = fakeChannel();
    deliver(1, 2, 3, 4, 5, 6, 7, 8);
    channel.ack(msg(1));
    channel.ack(msg(2));
    acks.flush();
    expect(frames).toEqual([{ kind: 'ack', tag: 2, multiple: true }]);
    endTurn();
    expect(frames).toHaveLength(1);
  });

  it('throws at once on a closed channel, and drops a turn whose channel closed before it ended', () => {
    const { channel, frames, close, endTurn, deliver } = fakeChannel();
    deliver(1, 2, 3, 4, 5, 6, 7, 8);
    channel.ack(msg(1));
    close();
    expect(() => endTurn()).not.toThrow();
    expect(frames).toEqual([]);
    expect(() => channel.ack(msg(2))).toThrow('Channel closed');
  });

  it('acks one by one from the first ack of a tag it was never told was delivered', () => {
    const { channel, frames, endTurn } = fakeChannel();
    channel.ack(msg(1));
    endTurn();
    channel.ack(msg(2));
    channel.ack(msg(3));
    expect(frames).toEqual([
      { kind: 'ack', tag: 1, multiple: false },
      { kind: 'ack', tag: 2, multiple: false },
      { kind: 'ack', tag: 3, multiple: false },
    ]);
  });

  it('passes an ack of every tag up to one through, after the gathered ones', () => {
    const { channel, frames, endTurn, deliver } = fakeChannel();
    deliver(1, 2, 3, 4, 5, 6, 7, 8);
    channel.ack(msg(3));
    channel.ack(msg(5), true);
    expect(frames).toEqual([
      { kind: 'ack', tag: 3, multiple: false },
      { kind: 'ack', tag: 5, multiple: true },
    ]);
    channel.ack(msg(6));
    endTurn();
    expect(frames[2]).toEqual({ kind: 'ack', tag: 6, multiple: true });
  });
});
