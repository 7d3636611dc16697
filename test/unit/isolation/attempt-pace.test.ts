import { describe, it, expect } from 'vitest';
import { AttemptPace } from '../../../src/isolation/attempt-pace.js';

/** A pace with `times` (ms) as each target's mean attempt time. */
function paced(times: Record<string, number>, maxTargets = 100): AttemptPace {
  const pace = new AttemptPace(maxTargets);
  for (const [target, ms] of Object.entries(times)) pace.attemptTook(target, ms);
  return pace;
}

describe("AttemptPace: whether the receiver or the machine sets a target's pace", () => {
  it('on an idle worker a backlog is worth a move once its attempts take 150 ms, or three times a timed move', () => {
    const pace = paced({ slow: 150, quick: 40, instant: 5 });
    expect(pace.saturated()).toBe(false);
    expect(pace.worthMoving('slow')).toBe(true);
    expect(pace.worthMoving('quick')).toBe(false);
    pace.moveTook(10);
    expect(pace.worthMoving('quick')).toBe(true);
    expect(pace.worthMoving('instant')).toBe(false);
    expect(pace.pacedByMachine('quick')).toBe(false);
  });

  it('saturated, a target within three times the median one is paced by the machine and never worth a move; one beyond and 150 ms slower is', () => {
    const pace = paced({ a: 200, b: 220, c: 240, slow: 800 });
    pace.moveTook(10);
    pace.sampleLoop(0.9);
    expect(pace.saturated()).toBe(true);
    expect(pace.worthMoving('a')).toBe(false);
    expect(pace.pacedByMachine('a')).toBe(true);
    expect(pace.slowByItself('slow')).toBe(true);
    expect(pace.worthMoving('slow')).toBe(true);
    expect(pace.pacedByMachine('slow')).toBe(false);
    pace.attemptTook('c', 640);
    pace.sampleLoop(0.9);
    // The median is now 220 ms: 3 × 220 = 660 ms and c's mean, 320 ms, is within it.
    expect(pace.pacedByMachine('c')).toBe(true);
    expect(pace.pacedByMachine('untimed')).toBe(false);
  });

  it('one target alone is no measure of the others: no median, nothing paced by the machine', () => {
    const pace = paced({ alone: 300 });
    pace.sampleLoop(1);
    expect(pace.pacedByMachine('alone')).toBe(false);
    expect(pace.worthMoving('alone')).toBe(false);
    expect(pace.slowByItself('alone')).toBe(true);
  });

  it('stays saturated while the average of the loop samples is high, and not after', () => {
    const pace = new AttemptPace(10);
    for (let i = 0; i < 5; i += 1) pace.sampleLoop(1);
    pace.sampleLoop(0.1);
    expect(pace.saturated()).toBe(true);
    pace.sampleLoop(0.1);
    expect(pace.saturated()).toBe(false);
  });

  it('keeps a moving average per target, and forgets the least recently finished one past its bound', () => {
    const pace = paced({ slow: 1_000, fast: 10 }, 2);
    expect(pace.slowByItself('slow')).toBe(true);
    pace.attemptTook('other', 10);
    pace.sampleLoop(0);
    expect(pace.slowByItself('slow')).toBe(false);
    pace.attemptTook('fast', 1_010);
    pace.sampleLoop(0);
    // 10 + (1,010 − 10) × 0.2 = 210: one slow attempt moves the average a fifth of the way.
    expect(pace.worthMoving('fast')).toBe(true);
  });
});
