import { describe, expect, it } from 'vitest';
import { heldDestination } from '../../../src/control/move-held.js';
import { laneBucket, laneOf, topologyNames } from '../../../src/topology/topology-names.js';

const names = topologyNames('p', 4);
const body = (url: string): Buffer => Buffer.from(JSON.stringify({ url, body: {} }));

describe('heldDestination', () => {
  it('keeps a callback of a paused origin held', () => {
    expect(heldDestination(body('https://a.example/hook'), names, (origin) => origin === 'https://a.example')).toBe('p.paused');
  });

  it('returns a resumed callback to its own lane', () => {
    const lane = names.workQueues[laneOf(laneBucket('https://a.example'), 4)];
    expect(heldDestination(body('https://a.example/hook'), names, () => false)).toBe(lane);
  });

  it('sends what it cannot read to lane 0, where it is parked as invalid', () => {
    expect(heldDestination(Buffer.from('not json'), names, () => true)).toBe('p.work');
    expect(heldDestination(Buffer.from('{"url":"nope"}'), names, () => true)).toBe('p.work');
  });
});
