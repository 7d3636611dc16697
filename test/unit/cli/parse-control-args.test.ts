import { describe, expect, it } from 'vitest';
import { parseCancelArgs, parseTargetArgs } from '../../../src/cli/parse-control-args.js';
import { UsageError } from '../../../src/cli/usage-error.js';
import { formatPaused } from '../../../src/cli/format-paused.js';
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
