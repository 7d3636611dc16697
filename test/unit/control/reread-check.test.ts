import { describe, expect, it } from 'vitest';
import { RereadCheck } from '../../../src/control/reread-check.js';

const at = (offset: number, text: string) => ({ offset, content: Buffer.from(text) });

describe('RereadCheck: the same control stream or a new one after a consumer cancel', () => {
  it('the same bytes at the last applied offset: the same stream, nothing held is applied again', () => {
    const check = new RereadCheck(at(2, 'c'));
    expect(check.next(at(0, 'a'), false)).toEqual({ decided: false });
    expect(check.next(at(1, 'b'), false)).toEqual({ decided: false });
    expect(check.next(at(2, 'c'), false)).toEqual({ decided: true, renewed: false, apply: [] });
  });

  it('other bytes there: a new stream, everything held and the marker are applied', () => {
    const check = new RereadCheck(at(1, 'b'));
    check.next(at(0, 'x'), false);
    expect(check.next(at(1, 'y'), false)).toEqual({ decided: true, renewed: true, apply: [at(0, 'x'), at(1, 'y')] });
  });

  it('its own sync marker read before the last offset: a new, shorter stream', () => {
    const check = new RereadCheck(at(9, 'z'));
    check.next(at(0, 'cancel'), false);
    expect(check.next(at(1, 'sync'), true)).toEqual({ decided: true, renewed: true, apply: [at(0, 'cancel'), at(1, 'sync')] });
  });

  it('a marker past the last offset without it: the same stream, cut by retention', () => {
    expect(new RereadCheck(at(3, 'c')).next(at(7, 'g'), false)).toEqual({ decided: true, renewed: false, apply: [at(7, 'g')] });
  });

  it('no decision in time: what is held is applied, as for a new stream', () => {
    const check = new RereadCheck(at(5, 'e'));
    check.next(at(0, 'a'), false);
    expect(check.expire()).toEqual({ decided: true, renewed: true, apply: [at(0, 'a')] });
  });
});
