import { describe, it, expect } from 'vitest';
import {
  DELAY_LEVELS,
  LEVEL_LEAD_MS,
  MAX_LEVEL_DELAY_MS,
  delayRoutingKey,
  levelRoutes,
  levelDelaySeconds,
  levelTtlMs,
} from '../../../src/topology/delay-levels.js';
import { mulberry32, randomInt } from '../../support/prng.js';

const MAX_SECONDS = 2 ** 22 - 1;

/** AMQP topic matching: `*` is exactly one word, `#` zero or more words. */
function topicMatches(bindingKey: string, routingKey: string): boolean {
  const pattern = bindingKey.split('.');
  const words = routingKey.split('.');
  const match = (p: number, w: number): boolean => {
    if (p === pattern.length) return w === words.length;
    const part = pattern[p];
    if (part === '#') {
      for (let skip = w; skip <= words.length; skip += 1) if (match(p + 1, skip)) return true;
      return false;
    }
    if (w === words.length) return false;
    return (part === '*' || part === words[w]) && match(p + 1, w + 1);
  };
  return match(0, 0);
}

/**
 * Walks a message through the levels the way declare-delay-levels wires them: it enters the exchange
 * with all levels ahead, and each exchange sends it by levelRoutes to a level queue (which waits
 * levelTtlMs, then dead-letters to the exchange with the lower levels ahead) or to P.lanes. Returns
 * the total wait in seconds and the routing steps taken, failing unless exactly one binding matches.
 */
function simulate(delayKey: string): { seconds: number; steps: number } {
  // A retry's key ends with its lane bucket; the levels must ignore that word.
  const routingKey = `${delayKey}.7`;
  let totalMs = 0;
  let steps = 0;
  for (let top = DELAY_LEVELS - 1; ; ) {
    const matched = levelRoutes(top).filter((route) => topicMatches(route.bindingKey, routingKey));
    if (matched.length !== 1) throw new Error(`the exchange with levels ${top}…0 ahead routes ${routingKey} to ${matched.length} bindings`);
    steps += 1;
    const { to } = matched[0]!;
    if (to === 'lanes') break;
    totalMs += levelTtlMs(to);
    if (to === 0) break;
    top = to - 1;
  }
  return { seconds: totalMs / 1_000, steps };
}
const simulateSeconds = (routingKey: string): number => simulate(routingKey).seconds;

describe('topicMatches (test helper)', () => {
  it('follows AMQP topic semantics', () => {
    expect(topicMatches('a.*.c', 'a.b.c')).toBe(true);
    expect(topicMatches('a.*.c', 'a.c')).toBe(false);
    expect(topicMatches('a.*', 'a.b.c')).toBe(false);
    expect(topicMatches('a.#', 'a')).toBe(true);
    expect(topicMatches('a.#', 'a.b.c')).toBe(true);
    expect(topicMatches('#', 'x.y')).toBe(true);
    expect(topicMatches('*.1.#', '0.1')).toBe(true);
    expect(topicMatches('*.1.#', '1.0')).toBe(false);
  });
});

describe('delay level constants', () => {
  it('has 22 levels covering up to 2^22 − 1 s', () => {
    expect(DELAY_LEVELS).toBe(22);
    expect(MAX_LEVEL_DELAY_MS).toBe(MAX_SECONDS * 1_000);
  });

  it('gives level n a TTL of 2^n s', () => {
    expect(levelTtlMs(0)).toBe(1_000);
    expect(levelTtlMs(1)).toBe(2_000);
    expect(levelTtlMs(10)).toBe(1_024_000);
    expect(levelTtlMs(21)).toBe(2_097_152_000);
  });
});

describe('levelDelaySeconds', () => {
  it('counts the whole seconds of the delay less the lead: the levels let a message out early, never late', () => {
    expect(LEVEL_LEAD_MS).toBe(250);
    expect(levelDelaySeconds(0)).toBe(0);
    expect(levelDelaySeconds(1)).toBe(0);
    expect(levelDelaySeconds(1_249)).toBe(0);
    expect(levelDelaySeconds(1_250)).toBe(1);
    expect(levelDelaySeconds(2_249)).toBe(1);
    expect(levelDelaySeconds(2_250)).toBe(2);
    expect(levelDelaySeconds(15_000)).toBe(14);
    expect(levelDelaySeconds(15_250)).toBe(15);
  });

  it('treats a negative delay as 0', () => {
    expect(levelDelaySeconds(-5_000)).toBe(0);
  });

  it('clamps at 2^22 − 1 s', () => {
    expect(levelDelaySeconds(MAX_LEVEL_DELAY_MS)).toBe(MAX_SECONDS - 1);
    expect(levelDelaySeconds(MAX_LEVEL_DELAY_MS + 250)).toBe(MAX_SECONDS);
    expect(levelDelaySeconds(MAX_LEVEL_DELAY_MS + 10_000)).toBe(MAX_SECONDS);
    expect(levelDelaySeconds(Number.MAX_SAFE_INTEGER)).toBe(MAX_SECONDS);
  });
});

describe('delayRoutingKey', () => {
  it('spells the seconds in binary, 22 words, highest level first', () => {
    expect(delayRoutingKey(0)).toBe(Array(22).fill('0').join('.'));
    expect(delayRoutingKey(1)).toBe(`${'0.'.repeat(21)}1`);
    expect(delayRoutingKey(5)).toBe(`${'0.'.repeat(19)}1.0.1`);
    expect(delayRoutingKey(2 ** 21)).toBe(`1${'.0'.repeat(21)}`);
    expect(delayRoutingKey(MAX_SECONDS)).toBe(Array(22).fill('1').join('.'));
  });

  it('always has 22 words of 0 or 1 within the range', () => {
    const random = mulberry32(1);
    for (let i = 0; i < 500; i += 1) {
      const words = delayRoutingKey(randomInt(random, 0, MAX_SECONDS)).split('.');
      expect(words).toHaveLength(22);
      expect(words.every((word) => word === '0' || word === '1')).toBe(true);
    }
  });
});

describe('levelRoutes', () => {
  it('from the entry exchange: the highest set bit, by its word, then #', () => {
    const routes = levelRoutes(21);
    expect(routes).toHaveLength(23);
    expect(routes[0]).toEqual({ bindingKey: '1.#', to: 21 });
    expect(routes[1]).toEqual({ bindingKey: '0.1.#', to: 20 });
    expect(routes[21]).toEqual({ bindingKey: `${'0.'.repeat(21)}1.#`, to: 0 });
    expect(routes[22]).toEqual({ bindingKey: `${Array(22).fill('0').join('.')}.*`, to: 'lanes' });
  });

  it('below level n: the words of the levels behind match anything', () => {
    expect(levelRoutes(0)).toEqual([
      { bindingKey: `${'*.'.repeat(21)}1.#`, to: 0 },
      { bindingKey: `${'*.'.repeat(21)}0.*`, to: 'lanes' },
    ]);
    expect(levelRoutes(19)[1]).toEqual({ bindingKey: '*.*.0.1.#', to: 18 });
  });

  it('routes a single bit straight to its level', () => {
    for (let level = 0; level < DELAY_LEVELS; level += 1) {
      const only = delayRoutingKey(2 ** level);
      expect(levelRoutes(21).filter((route) => topicMatches(route.bindingKey, only)).map((route) => route.to)).toEqual([level]);
    }
  });
});

describe('the levels, simulated', () => {
  const expectRoundTrip = (delayMs: number): void => {
    const seconds = levelDelaySeconds(delayMs);
    expect(simulateSeconds(delayRoutingKey(seconds))).toBe(seconds);
  };

  it('wait exactly the delay for every whole second from 0 to 5000 s', () => {
    for (let seconds = 0; seconds <= 5_000; seconds += 1) expectRoundTrip(seconds * 1_000);
  });

  it('wait exactly the delay for seeded random delays up to 2^22 − 1 s', () => {
    const random = mulberry32(0xc0ffee);
    for (let i = 0; i < 2_000; i += 1) expectRoundTrip(randomInt(random, 0, MAX_SECONDS) * 1_000);
  });

  it('wait exactly the delay at every power of two and its neighbours', () => {
    for (let level = 0; level < DELAY_LEVELS; level += 1) {
      for (const seconds of [2 ** level - 1, 2 ** level, 2 ** level + 1]) {
        if (seconds <= MAX_SECONDS) expectRoundTrip(seconds * 1_000);
      }
    }
  });

  it('wait the whole seconds of the delay less the lead for sub-second remainders', () => {
    const random = mulberry32(99);
    for (let i = 0; i < 500; i += 1) {
      const delayMs = randomInt(random, 0, 100_000_000);
      expect(simulateSeconds(delayRoutingKey(levelDelaySeconds(delayMs)))).toBe(Math.max(0, Math.floor((delayMs - LEVEL_LEAD_MS) / 1_000)));
    }
  });

  it('wait the maximum for delays beyond it', () => {
    expect(simulateSeconds(delayRoutingKey(levelDelaySeconds(MAX_LEVEL_DELAY_MS * 2)))).toBe(MAX_SECONDS);
  });

  it('take one routing step per level visited, and one into P.work unless level 0 was the last', () => {
    expect(simulate(delayRoutingKey(15))).toEqual({ seconds: 8 + 4 + 2 + 1, steps: 4 });
    expect(simulate(delayRoutingKey(2 ** 21))).toEqual({ seconds: 2 ** 21, steps: 2 });
    expect(simulate(delayRoutingKey(1))).toEqual({ seconds: 1, steps: 1 });
    expect(simulate(delayRoutingKey(MAX_SECONDS))).toEqual({ seconds: MAX_SECONDS, steps: 22 });
  });
});
