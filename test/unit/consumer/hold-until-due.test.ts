import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createDueHold, holdMs, MAX_HOLD_MS } from '../../../src/consumer/hold-until-due.js';

const NOW = 1_700_000_000_000;
const due = (at: unknown): Record<string, unknown> => ({ 'x-callback-due-at': at });

describe('holdMs', () => {
  it('holds until the due time', () => {
    expect(holdMs(due(NOW + 300), NOW)).toBe(300);
    expect(holdMs(due(NOW + 1_250), NOW)).toBe(1_250);
  });

  it('does not hold a message that is due, overdue, or has no due time', () => {
    expect(holdMs(due(NOW), NOW)).toBe(0);
    expect(holdMs(due(NOW + 1), NOW)).toBe(0);
    expect(holdMs(due(NOW - 5_000), NOW)).toBe(0);
    expect(holdMs(undefined, NOW)).toBe(0);
    expect(holdMs({}, NOW)).toBe(0);
  });

  it('never holds for bad input: a string, NaN, an object', () => {
    expect(holdMs(due(String(NOW + 500)), NOW)).toBe(0);
    expect(holdMs(due(Number.NaN), NOW)).toBe(0);
    expect(holdMs(due({ at: NOW + 500 }), NOW)).toBe(0);
    expect(holdMs(due(Buffer.from('x')), NOW)).toBe(0);
  });

  it('reads a 64-bit integer header decoded as a bigint', () => {
    expect(holdMs(due(BigInt(NOW + 400)), NOW)).toBe(400);
  });

  it('holds at most MAX_HOLD_MS, whatever a clock ahead of ours wrote', () => {
    expect(holdMs(due(NOW + 60_000), NOW)).toBe(MAX_HOLD_MS);
    expect(MAX_HOLD_MS).toBeGreaterThan(1_250);
  });
});

describe('createDueHold', () => {
  let now = NOW;
  beforeEach(() => {
    vi.useFakeTimers();
    now = NOW;
  });
  afterEach(() => vi.useRealTimers());

  const noGiveBack = (): void => {
    throw new Error('given back');
  };

  it('releases a due message at once, and a held one when due', () => {
    const hold = createDueHold<object>(() => now);
    const channel = {};
    const released: string[] = [];
    hold.hold(undefined, channel, () => released.push('now'), noGiveBack);
    hold.hold(due(NOW + 500), channel, () => released.push('later'), noGiveBack);
    expect(released).toEqual(['now']);
    expect(hold.size).toBe(1);
    vi.advanceTimersByTime(499);
    expect(released).toEqual(['now']);
    vi.advanceTimersByTime(1);
    expect(released).toEqual(['now', 'later']);
    expect(hold.size).toBe(0);
  });

  it('releases nothing of a closed channel (the broker requeued it), and the rest as due', () => {
    const hold = createDueHold<object>(() => now);
    const [closed, open] = [{}, {}];
    const released: string[] = [];
    hold.hold(due(NOW + 300), closed, () => released.push('closed'), noGiveBack);
    hold.hold(due(NOW + 300), open, () => released.push('open'), noGiveBack);
    hold.channelClosed(closed);
    expect(hold.size).toBe(1);
    vi.advanceTimersByTime(1_000);
    expect(released).toEqual(['open']);
  });

  it('a stopping worker gives back every held message at once, unreleased, and each not yet due that comes after', () => {
    const hold = createDueHold<object>(() => now);
    const channel = {};
    const released: string[] = [];
    const givenBack: string[] = [];
    hold.hold(
      due(NOW + 300),
      channel,
      () => released.push('a'),
      () => givenBack.push('a'),
    );
    hold.hold(
      due(NOW + 900),
      channel,
      () => released.push('b'),
      () => givenBack.push('b'),
    );
    expect(hold.giveBackAll()).toBe(2);
    expect(givenBack).toEqual(['a', 'b']);
    expect(hold.size).toBe(0);
    hold.hold(
      due(NOW + 300),
      channel,
      () => released.push('after'),
      () => givenBack.push('after'),
    );
    // Due already: the pipeline has it, and gives it back as its own waiting jobs (pipeline.ts).
    hold.hold(
      undefined,
      channel,
      () => released.push('due'),
      () => givenBack.push('due'),
    );
    vi.advanceTimersByTime(5_000);
    expect(released).toEqual(['due']);
    expect(givenBack).toEqual(['a', 'b', 'after']);
    expect(hold.size).toBe(0);
  });

  it('gives back nothing of a closed channel: the broker has requeued it', () => {
    const hold = createDueHold<object>(() => now);
    const [closed, open] = [{}, {}];
    const givenBack: string[] = [];
    hold.hold(
      due(NOW + 300),
      closed,
      () => {},
      () => givenBack.push('closed'),
    );
    hold.hold(
      due(NOW + 300),
      open,
      () => {},
      () => givenBack.push('open'),
    );
    hold.channelClosed(closed);
    expect(hold.giveBackAll()).toBe(1);
    expect(givenBack).toEqual(['open']);
  });
});
