import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AttemptDeadline } from '../../../src/consumer/attempt-deadline.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('AttemptDeadline', () => {
  it('aborts with a TimeoutError at the timeout, emitting abort once', () => {
    const deadline = new AttemptDeadline(1_000, undefined);
    const onAbort = vi.fn();
    deadline.on('abort', onAbort);
    vi.advanceTimersByTime(999);
    expect(deadline.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(deadline.aborted).toBe(true);
    expect(deadline.reason?.name).toBe('TimeoutError');
    expect(onAbort).toHaveBeenCalledOnce();
    expect(deadline.finish()).toBe(false);
  });

  it('reports the attempt slow at the threshold, then still aborts at the timeout, not later', () => {
    const onSlow = vi.fn();
    const deadline = new AttemptDeadline(1_000, { afterMs: 300, onSlow });
    vi.advanceTimersByTime(299);
    expect(onSlow).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(onSlow).toHaveBeenCalledOnce();
    expect(deadline.aborted).toBe(false);
    vi.advanceTimersByTime(699);
    expect(deadline.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(deadline.aborted).toBe(true);
    expect(deadline.finish()).toBe(true);
  });

  it('leaves no timer behind once finished', () => {
    const onSlow = vi.fn();
    const deadline = new AttemptDeadline(1_000, { afterMs: 300, onSlow });
    vi.advanceTimersByTime(100);
    expect(deadline.finish()).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(5_000);
    expect(onSlow).not.toHaveBeenCalled();
    expect(deadline.aborted).toBe(false);
  });

  it('finished after the threshold: overdue, and the re-armed timer is cleared too', () => {
    const deadline = new AttemptDeadline(1_000, { afterMs: 300, onSlow: () => {} });
    vi.advanceTimersByTime(500);
    expect(deadline.finish()).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a threshold at or past the timeout is never reported: the attempt times out instead', () => {
    const onSlow = vi.fn();
    const deadline = new AttemptDeadline(1_000, { afterMs: 1_000, onSlow });
    vi.advanceTimersByTime(1_000);
    expect(onSlow).not.toHaveBeenCalled();
    expect(deadline.aborted).toBe(true);
  });
});
