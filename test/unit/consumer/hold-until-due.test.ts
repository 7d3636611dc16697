import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createDueHold, holdMs, MAX_HOLD_MS } from '../../../src/consumer/hold-until-due.js';

const NOW = 1_700_000_000_000;

describe('holdMs', () => {
  it('holds until the due time', () => {
    expect(holdMs(NOW + 300, NOW)).toBe(300);
    expect(holdMs(NOW + 1_250, NOW)).toBe(1_250);
  });

  it('does not hold a message that is due, overdue, or has no due time', () => {
    expect(holdMs(NOW, NOW)).toBe(0);
    expect(holdMs(NOW + 1, NOW)).toBe(0);
    expect(holdMs(NOW - 5_000, NOW)).toBe(0);
    expect(holdMs(undefined, NOW)).toBe(0);
  });

  it('holds at most MAX_HOLD_MS, whatever a clock ahead of ours wrote', () => {
    expect(holdMs(NOW + 60_000, NOW)).toBe(MAX_HOLD_MS);
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
    hold.hold(NOW + 500, channel, () => released.push('later'), noGiveBack);
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
    hold.hold(NOW + 300, closed, () => released.push('closed'), noGiveBack);
    hold.hold(NOW + 300, open, () => released.push('open'), noGiveBack);
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
      NOW + 300,
      channel,
      () => released.push('a'),
      () => givenBack.push('a'),
    );
    hold.hold(
      NOW + 900,
      channel,
      () => released.push('b'),
      () => givenBack.push('b'),
    );
    expect(hold.giveBackAll()).toBe(2);
    expect(givenBack).toEqual(['a', 'b']);
    expect(hold.size).toBe(0);
    hold.hold(
      NOW + 300,
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
      NOW + 300,
      closed,
      () => {},
      () => givenBack.push('closed'),
    );
    hold.hold(
      NOW + 300,
      open,
      () => {},
      () => givenBack.push('open'),
    );
    hold.channelClosed(closed);
    expect(hold.giveBackAll()).toBe(1);
    expect(givenBack).toEqual(['open']);
  });
});
