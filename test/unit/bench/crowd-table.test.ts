import { describe, it, expect } from 'vitest';
import { CROWD_SHAPES, crowdTable, type CrowdRun } from '../../../bench/scenarios/crowd.js';

const shape = CROWD_SHAPES.find((s) => s.name === 'crowd-1x40-plain-4w')!;
const summary = (max: number) => ({ count: 40, min: 0.1, p50: max / 2, p99: max, p999: max, max, mean: max / 2 });
const run = (isolation: 'on' | 'off', round: number, busyDrained: number, quietMax: number): CrowdRun => ({
  shape: shape.name,
  isolation,
  round,
  busyCallbacks: 3_000,
  quietDone: summary(quietMax),
  quietNotDone: 0,
  quietOverGoal: quietMax > 2 ? 1 : 0,
  busyDrained,
  allDone: busyDrained,
  workersReady: 2,
  firstReady: 1.5,
  quietPublishes: undefined,
  busyPublishes: undefined,
  allPublishes: 1,
  overflowMoves: 0,
  deferrals: 0,
  timeline: { binMs: 250, busy: [], quiet: [], quietPublishedAt: 0.5, moved: [] },
});

describe('crowdTable', () => {
  it('reads each on run against the off run of its own pair, and adds the medians of the pairs', () => {
    const runs = [
      run('on', 1, 8, 0.3),
      run('off', 1, 8, 4),
      run('on', 2, 9, 2.5),
      run('off', 2, 7.5, 4),
      run('on', 3, 7.7, 0.4),
      run('off', 3, 7, 4),
    ];
    const table = crowdTable(shape, runs);
    const ratio = table.headers.indexOf('× off');
    expect(table.rows.map((row) => [row[0], row[ratio]])).toEqual([
      ['on, pair 1', '1.00'],
      ['off, pair 1', '1.00'],
      ['on, pair 2', '1.20'],
      ['off, pair 2', '1.00'],
      ['on, pair 3', '1.10'],
      ['off, pair 3', '1.00'],
      ['on, median of 3 pairs', '1.10 (1.00–1.20)'],
    ]);
    const medians = table.rows.at(-1)!;
    expect(medians).toHaveLength(table.headers.length);
    expect(medians[table.headers.indexOf('max (s)')]).toBe('0.40 (worst 2.50)');
    expect(medians[table.headers.indexOf('quiet over 2 s')]).toBe('1 of 3 runs with a target over');
  });

  it('keeps the single-pair table as it was: no pair numbers, no median row', () => {
    const table = crowdTable(shape, [run('on', 1, 8, 0.3), run('off', 1, 8, 4)]);
    expect(table.rows.map((row) => row[0])).toEqual(['on', 'off']);
  });
});
