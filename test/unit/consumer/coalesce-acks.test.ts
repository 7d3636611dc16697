import type { Channel, Message } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { ackPaceFor, coalesceAcks, type AckPace } from '../../../src/consumer/coalesce-acks.js';

type Frame = { kind: 'ack' | 'nack'; tag: number; multiple: boolean; requeue?: boolean };

/**
 * A stand-in for amqplib's channel: records the frames its ack/nack would send. `hold` is the ack
 * hold's ms and count (0: acks above an unsettled one go at the end of their turn), `gather` how long
 * and how many acks are gathered (0: a turn's acks go at its end); `pass` moves its clock.
 */
function fakeChannel(hold: { ms: number; max?: number } = { ms: 0 }, gather: { ms: number; max?: number } = { ms: 0 }) {
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
  let now = 0;
  const timers: Array<{ at: number; run: () => void }> = [];
  const pace: AckPace = {
    gatherMs: gather.ms,
    gatherMax: gather.max ?? 1000,
    holdMs: hold.ms,
    holdMax: hold.max ?? 32,
    now: () => now,
    after: (ms, run) => {
      const timer = { at: now + ms, run };
      timers.push(timer);
      return () => void timers.splice(timers.indexOf(timer), 1);
    },
  };
  const acks = coalesceAcks(
    channel as unknown as Channel,
    () => closed,
    pace,
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
    /** `ms` pass: the hold's timers due by then run. */
    pass: (ms: number) => {
      now += ms;
      for (const timer of timers.filter((t) => t.at <= now)) {
        timers.splice(timers.indexOf(timer), 1);
        timer.run();
      }
    },
    pendingTimers: () => timers.length,
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

  it('holds acks above an unsettled message for it: settled within the hold, one multiple ack covers them all', () => {
    const { channel, frames, endTurn, deliver, pass, pendingTimers } = fakeChannel({ ms: 5 });
    deliver(1, 2, 3, 4, 5);
    channel.ack(msg(2));
    channel.ack(msg(3));
    endTurn();
    expect(frames).toEqual([]);
    pass(3);
    channel.ack(msg(1));
    channel.ack(msg(5));
    endTurn();
    // 1 completes 1–3; 5 still waits for 4.
    expect(frames).toEqual([{ kind: 'ack', tag: 3, multiple: true }]);
    channel.ack(msg(4));
    endTurn();
    expect(frames).toEqual([
      { kind: 'ack', tag: 3, multiple: true },
      { kind: 'ack', tag: 5, multiple: true },
    ]);
    expect(pendingTimers()).toBe(0);
  });

  it('sends held acks one by one once their hold is over, from the first of them held', () => {
    const { channel, frames, endTurn, deliver, pass } = fakeChannel({ ms: 5 });
    deliver(1, 2, 3, 4);
    channel.ack(msg(2));
    endTurn();
    pass(3);
    channel.ack(msg(3));
    endTurn();
    expect(frames).toEqual([]);
    pass(2);
    expect(frames).toEqual([
      { kind: 'ack', tag: 2, multiple: false },
      { kind: 'ack', tag: 3, multiple: false },
    ]);
    // A later one waits a hold of its own.
    channel.ack(msg(4));
    endTurn();
    expect(frames).toHaveLength(2);
    pass(5);
    expect(frames[2]).toEqual({ kind: 'ack', tag: 4, multiple: false });
  });

  it('holds no more than its count: past it, the held acks go at once', () => {
    const { channel, frames, endTurn, deliver } = fakeChannel({ ms: 5, max: 2 });
    deliver(1, 2, 3, 4, 5);
    channel.ack(msg(2));
    channel.ack(msg(3));
    endTurn();
    expect(frames).toEqual([]);
    channel.ack(msg(4));
    endTurn();
    expect(frames.map((f) => f.tag)).toEqual([2, 3, 4]);
  });

  it('flush sends held acks at once too, and a hold whose channel closed ends quietly', () => {
    const first = fakeChannel({ ms: 5 });
    first.deliver(1, 2, 3);
    first.channel.ack(msg(2));
    first.endTurn();
    first.acks.flush();
    expect(first.frames).toEqual([{ kind: 'ack', tag: 2, multiple: false }]);
    const second = fakeChannel({ ms: 5 });
    second.deliver(1, 2);
    second.channel.ack(msg(2));
    second.endTurn();
    second.close();
    expect(() => second.pass(5)).not.toThrow();
    expect(second.frames).toEqual([]);
  });

  it('gathers acks across turns until the first has waited its time, then sends them as one multiple ack', () => {
    const { channel, frames, endTurn, deliver, pass } = fakeChannel({ ms: 0 }, { ms: 20 });
    deliver(1, 2, 3);
    channel.ack(msg(1));
    endTurn();
    pass(10);
    channel.ack(msg(2));
    endTurn();
    expect(frames).toEqual([]);
    pass(10);
    expect(frames).toEqual([{ kind: 'ack', tag: 2, multiple: true }]);
    channel.ack(msg(3));
    pass(20);
    expect(frames.at(-1)).toEqual({ kind: 'ack', tag: 3, multiple: true });
  });

  it('sends gathered acks at the end of the turn once their count is reached, and on flush at once', () => {
    const { channel, frames, acks, endTurn, deliver, pass } = fakeChannel({ ms: 0 }, { ms: 20, max: 2 });
    deliver(1, 2, 3);
    channel.ack(msg(1));
    channel.ack(msg(2));
    expect(frames).toEqual([]);
    endTurn();
    expect(frames).toEqual([{ kind: 'ack', tag: 2, multiple: true }]);
    channel.ack(msg(3));
    acks.flush();
    expect(frames.at(-1)).toEqual({ kind: 'ack', tag: 3, multiple: true });
    pass(20);
    expect(frames).toHaveLength(2);
  });

  it('paces a consumer by its window: an eighth gathered, a quarter held, and at least one of each', () => {
    expect(ackPaceFor(600)).toMatchObject({ gatherMs: 20, gatherMax: 75, holdMs: 100, holdMax: 150 });
    expect(ackPaceFor(3)).toMatchObject({ gatherMax: 1, holdMax: 1 });
  });
});
