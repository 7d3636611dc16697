import { describe, expect, it } from 'vitest';
import { parseCancelArgs, parseTargetArgs } from '../../../src/cli/parse-control-args.js';
import { UsageError } from '../../../src/cli/usage-error.js';
import { formatPaused, formatTargets } from '../../../src/cli/format-paused.js';
import { cancelMarker } from '../../../src/control/publish-markers.js';

describe('callback-relay cancel arguments', () => {
  it('takes one or more ids', () => {
    expect(parseCancelArgs(['a', 'b'])).toEqual({ action: 'cancel', ids: ['a', 'b'] });
    expect(parseCancelArgs([])).toEqual({ action: 'help' });
    expect(() => parseCancelArgs(['--all'])).toThrow(UsageError);
  });

  it('refuses an id no callback can have, naming the field', () => {
    expect(cancelMarker('order-42', 0)).toEqual({ type: 'cancel', id: 'order-42', at: '1970-01-01T00:00:00.000Z' });
    expect(() => cancelMarker(' spaced ', 0)).toThrow(expect.objectContaining({ code: 'CR_ERR_INVALID_CALLBACK', field: 'id' }));
  });
});

describe('callback-relay target arguments', () => {
  it('pause and resume take one origin; list takes nothing', () => {
    expect(parseTargetArgs(['pause', 'https://a.example/'])).toEqual({ action: 'pause', origin: 'https://a.example' });
    expect(parseTargetArgs(['resume', 'http://127.0.0.1:9000'])).toEqual({ action: 'resume', origin: 'http://127.0.0.1:9000' });
    expect(parseTargetArgs(['list'])).toEqual({ action: 'list', json: false });
    expect(parseTargetArgs(['list', '--json'])).toEqual({ action: 'list', json: true });
  });

  it('refuses a URL with a path, a missing origin and unknown commands', () => {
    expect(() => parseTargetArgs(['pause', 'https://a.example/hook'])).toThrow(/must be an origin/);
    expect(() => parseTargetArgs(['pause'])).toThrow(/give one origin/);
    expect(() => parseTargetArgs(['stop', 'https://a.example'])).toThrow(/unknown target command/);
    expect(() => parseTargetArgs(['list', 'x'])).toThrow(UsageError);
    expect(() => parseTargetArgs(['list', '--yaml'])).toThrow(UsageError);
  });
});

describe('callback-relay target list output', () => {
  const since = '2026-01-01T00:00:00.000Z';
  const paused = [
    { origin: 'https://a.example', since, by: 'operator' as const },
    { origin: 'https://b.example', since, by: 'auto-pause' as const },
    { origin: 'https://c.example', since, by: null },
  ];

  it('one line per paused origin: since when and by whom, when its marker says', () => {
    expect(formatPaused(paused, false).split('\n')).toEqual([
      `https://a.example  paused since ${since}  by an operator`,
      `https://b.example  paused since ${since}  by AUTO_PAUSE_AFTER`,
      `https://c.example  paused since ${since}`,
    ]);
    expect(formatPaused([], false)).toBe('no target is paused');
  });

  it('--json: one JSON array, empty when nothing is paused', () => {
    expect(JSON.parse(formatPaused(paused, true))).toEqual(paused);
    expect(formatPaused([], true)).toBe('[]');
  });
});

describe('callback-relay target limit arguments', () => {
  it('takes an origin and a rate (per s, m or h), a burst, a concurrency, or --clear', () => {
    expect(parseTargetArgs(['limit', 'https://a.example', '--rate', '20/s'])).toEqual({
      action: 'limit',
      origin: 'https://a.example',
      limit: { rate: 20 },
    });
    expect(parseTargetArgs(['limit', 'https://a.example', '--rate', '120/m', '--burst', '4', '--concurrency', '5'])).toEqual({
      action: 'limit',
      origin: 'https://a.example',
      limit: { rate: 2, burst: 4, concurrency: 5 },
    });
    expect(parseTargetArgs(['limit', 'https://a.example', '--concurrency', '1'])).toEqual({
      action: 'limit',
      origin: 'https://a.example',
      limit: { concurrency: 1 },
    });
    expect(parseTargetArgs(['limit', 'https://a.example', '--clear'])).toEqual({
      action: 'limit',
      origin: 'https://a.example',
      limit: null,
    });
  });

  it('names the flag and the value it refuses', () => {
    expect(() => parseTargetArgs(['limit', 'https://a.example', '--rate', 'fast'])).toThrow(
      'target limit: --rate must be a rate such as 20/s, 600/m or 1000/h, got "fast"',
    );
    expect(() => parseTargetArgs(['limit', 'https://a.example', '--rate', '5/s', '--burst', '0'])).toThrow(
      'target limit: --burst must be a whole number from 1 to 1000000, got "0"',
    );
    expect(() => parseTargetArgs(['limit', 'https://a.example', '--concurrency', 'two'])).toThrow('--concurrency must be a whole number');
    expect(() => parseTargetArgs(['limit', 'https://a.example', '--burst', '3'])).toThrow('--rate give a rate, a concurrency or both');
    expect(() => parseTargetArgs(['limit', 'https://a.example'])).toThrow('give a rate, a concurrency or both');
    expect(() => parseTargetArgs(['limit', 'https://a.example', '--clear', '--rate', '1/s'])).toThrow('--clear takes no --rate');
    expect(() => parseTargetArgs(['limit', 'https://a.example/x', '--rate', '1/s'])).toThrow(/must be an origin/);
    expect(() => parseTargetArgs(['limit', '--rate', '1/s'])).toThrow(/give one origin/);
  });

  it('target list shows limits after the pauses; --json keeps one array', () => {
    const limits = [
      { origin: 'https://a.example', limit: { rate: 0.5, concurrency: 2 }, at: '2026-01-01T00:00:00.000Z' },
      { origin: 'https://b.example', limit: null, at: '2026-01-02T00:00:00.000Z' },
    ];
    expect(formatTargets([], limits, false)).toBe(
      'no target is paused\nhttps://a.example  limited to rate 30/m concurrency 2 since 2026-01-01T00:00:00.000Z\nhttps://b.example  limit cleared since 2026-01-02T00:00:00.000Z',
    );
    const paused = [{ origin: 'https://a.example', since: '2025-12-31T00:00:00.000Z', by: 'operator' as const }];
    expect(JSON.parse(formatTargets(paused, limits, true))).toEqual([
      { ...paused[0], limit: limits[0]!.limit, limitSetAt: limits[0]!.at },
      { origin: 'https://b.example', limit: null, limitSetAt: limits[1]!.at },
    ]);
    expect(formatTargets(paused, [], true)).toBe(formatPaused(paused, true));
  });
});
