import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LimitWake, Sweeper } from '../../../src/consumer/pipeline-timers.js';

// Timers only: the sweep reads the event loop's real utilisation.
beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] }));
afterEach(() => vi.useRealTimers());

describe('LimitWake', () => {
  it('keeps one wake, for the soonest', () => {
    let woken = 0;
    const wake = new LimitWake(() => (woken += 1));
    wake.after(100, 0);
    wake.after(300, 0);
    wake.after(50, 0);
    wake.after(undefined, 0);
    vi.advanceTimersByTime(50);
    expect(woken).toBe(1);
    vi.advanceTimersByTime(500);
    expect(woken).toBe(1);
  });

  it('wakes no more once stopped', () => {
    let woken = 0;
    const wake = new LimitWake(() => (woken += 1));
    wake.after(10, 0);
    wake.stop();
    vi.advanceTimersByTime(100);
    expect(woken).toBe(0);
  });
});

describe('Sweeper', () => {
  it("sweeps every 50 ms with the event loop's busy share, until stopped", () => {
    const shares: number[] = [];
    const sweeper = new Sweeper((loopBusy) => shares.push(loopBusy()));
    vi.advanceTimersByTime(120);
    sweeper.stop();
    vi.advanceTimersByTime(200);
    expect(shares).toHaveLength(2);
    for (const share of shares) expect(share).toBeGreaterThanOrEqual(0);
  });
});
