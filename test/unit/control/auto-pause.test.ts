import { describe, expect, it } from 'vitest';
import { AutoPause } from '../../../src/control/auto-pause.js';

const A = 'https://a.example';
const B = 'https://b.example';

describe('AutoPause (AUTO_PAUSE_AFTER)', () => {
  it('pauses once every attempt to an origin has failed for the whole time, then starts over', () => {
    const auto = new AutoPause(60_000, 10_000, 1);
    expect(auto.record(A, false, 0)).toBe(false);
    expect(auto.record(A, false, 59_999)).toBe(false);
    expect(auto.record(A, false, 60_000)).toBe(true);
    // The streak starts over: a target resumed later gets the full time again.
    expect(auto.record(A, false, 60_001)).toBe(false);
    expect(auto.record(A, false, 100_000)).toBe(false);
  });

  it('a single success ends the streak', () => {
    const auto = new AutoPause(1_000, 10_000, 1);
    auto.record(A, false, 0);
    expect(auto.record(A, true, 500)).toBe(false);
    expect(auto.record(A, false, 1_200)).toBe(false);
    expect(auto.record(A, false, 2_199)).toBe(false);
    expect(auto.record(A, false, 2_200)).toBe(true);
  });

  it('one failure alone never pauses, however old, and origins are counted apart', () => {
    const auto = new AutoPause(1_000, 10_000, 1);
    expect(auto.record(A, false, 0)).toBe(false);
    expect(auto.record(B, false, 5_000)).toBe(false);
    expect(auto.record(B, true, 5_001)).toBe(false);
    expect(auto.record(A, false, 5_002)).toBe(true);
  });

  it('needs minFailures failed attempts in the streak (5 by default): sparse failures are thin evidence', () => {
    const auto = new AutoPause(1_000);
    expect(auto.record(A, false, 0)).toBe(false);
    expect(auto.record(A, false, 86_400_000)).toBe(false); // a day later, only 2 failures
    expect(auto.record(A, false, 86_400_001)).toBe(false);
    expect(auto.record(A, false, 86_400_002)).toBe(false);
    expect(auto.record(A, false, 86_400_003)).toBe(true); // the 5th
  });

  it('keeps at most maxOrigins streaks, forgetting the oldest first', () => {
    const auto = new AutoPause(1_000, 2, 1);
    auto.record('https://1.example', false, 0);
    auto.record('https://2.example', false, 0);
    auto.record('https://3.example', false, 0);
    expect(auto.size).toBe(2);
    expect(auto.record('https://1.example', false, 2_000)).toBe(false); // forgotten: a new streak
    expect(auto.record('https://3.example', false, 2_000)).toBe(true);
  });
});
