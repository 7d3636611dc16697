import { describe, it, expect } from 'vitest';
import { formatDuration, parseDuration, parseDurationList } from '../../../src/config/duration.js';

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['15s', 15_000],
    ['3m', 180_000],
    ['6h', 21_600_000],
    ['0s', 0],
    ['0', 0],
  ])('parses %s as %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it('reads a bare number as milliseconds', () => {
    expect(parseDuration('1000')).toBe(1_000);
    expect(parseDuration('7')).toBe(7);
  });

  it('accepts decimals and rounds to whole milliseconds', () => {
    expect(parseDuration('1.5s')).toBe(1_500);
    expect(parseDuration('0.25m')).toBe(15_000);
    expect(parseDuration('0.5ms')).toBe(1);
    expect(parseDuration('0.4ms')).toBe(0);
    expect(parseDuration('2.0004s')).toBe(2_000);
  });

  it('ignores surrounding whitespace', () => {
    expect(parseDuration('  15s ')).toBe(15_000);
    expect(parseDuration('\t3m\n')).toBe(180_000);
  });

  it.each([
    '',
    ' ',
    's',
    'ms',
    '15 s',
    '15S',
    '15sec',
    '1d',
    '1y',
    '-1s',
    '+1s',
    '1e3',
    '.5s',
    '1.',
    'Infinity',
    'NaN',
    '1,5s',
    '15s30s',
    'abc',
  ])('rejects %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it('returns undefined instead of Infinity for absurdly long numbers', () => {
    expect(parseDuration(`${'9'.repeat(400)}h`)).toBeUndefined();
  });
});

describe('parseDurationList', () => {
  it('parses a comma-separated list in order', () => {
    expect(parseDurationList('15s,30s,3m')).toEqual([15_000, 30_000, 180_000]);
  });

  it('trims each entry', () => {
    expect(parseDurationList(' 15s , 30s,  1h ')).toEqual([15_000, 30_000, 3_600_000]);
  });

  it('parses a single entry', () => {
    expect(parseDurationList('250')).toEqual([250]);
  });

  it.each(['', ',', '15s,', ',15s', '15s,,30s', '15s,x', '15s;30s'])('rejects %j when any entry is not a duration', (text) => {
    expect(parseDurationList(text)).toBeUndefined();
  });
});

describe('formatDuration', () => {
  it.each([
    [15_000, '15s'],
    [10_800_000, '3h'],
    [3_600_000, '1h'],
    [60_000, '1m'],
    [180_000, '3m'],
    [90_000, '90s'],
    [1_500, '1500ms'],
    [1, '1ms'],
    [0, '0ms'],
  ])('formats %i as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('picks the largest unit that divides exactly', () => {
    expect(formatDuration(7_200_000)).toBe('2h');
    expect(formatDuration(5_400_000)).toBe('90m');
    expect(formatDuration(4_194_303_000)).toBe('4194303s');
  });

  it('round-trips through parseDuration', () => {
    for (const ms of [0, 1, 999, 1_000, 1_500, 15_000, 61_000, 180_000, 3_600_000, 5_400_000, 21_600_000, 4_194_303_000]) {
      expect(parseDuration(formatDuration(ms))).toBe(ms);
    }
  });
});
