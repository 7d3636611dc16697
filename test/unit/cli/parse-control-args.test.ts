import { describe, expect, it } from 'vitest';
import { parseCancelArgs, parseTargetArgs } from '../../../src/cli/parse-control-args.js';
import { UsageError } from '../../../src/cli/usage-error.js';
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
    expect(parseTargetArgs(['list'])).toEqual({ action: 'list' });
  });

  it('refuses a URL with a path, a missing origin and unknown commands', () => {
    expect(() => parseTargetArgs(['pause', 'https://a.example/hook'])).toThrow(/must be an origin/);
    expect(() => parseTargetArgs(['pause'])).toThrow(/give one origin/);
    expect(() => parseTargetArgs(['stop', 'https://a.example'])).toThrow(/unknown target command/);
    expect(() => parseTargetArgs(['list', 'x'])).toThrow(UsageError);
  });
});
