import { describe, it, expect } from 'vitest';
import {
  DELAY_BITS,
  DELAY_LEVELS,
  DIGITS,
  KEY_SPELLINGS,
  LEVEL_LEAD_MS,
  MAX_LEVEL_DELAY_MS,
  delayRoutingKey,
  levelRoutes,
  levelDelaySeconds,
  levelTtlMs,
  levelsVisited,
} from '../../../src/topology/delay-levels.js';
import { mulberry32, randomInt } from '../../support/prng.js';
import { topicMatches } from '../../support/topic-matches.js';

const MAX_SECONDS = 2 ** 22 - 1;

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
  it('has 78 levels of radix 16 covering up to 2^22 − 1 s', () => {
    expect(DELAY_BITS).toBe(22);
    expect(DIGITS).toBe(6);
    expect(DELAY_LEVELS).toHaveLength(5 * 15 + 3);
    expect(MAX_LEVEL_DELAY_MS).toBe(MAX_SECONDS * 1_000);
    // The highest digit of every position, all visited, is the longest delay.
    const highest = Array.from({ length: DIGITS }, (_, position) =>
      Math.max(...DELAY_LEVELS.filter((level) => level.position === position).map((level) => level.seconds)),
    );
    expect(highest.reduce((sum, seconds) => sum + seconds, 0)).toBe(MAX_SECONDS);
  });

  it('lists the levels highest first, each waiting digit × 16^position s', () => {
    expect(DELAY_LEVELS[0]).toEqual({ position: 5, digit: 3, seconds: 3 * 2 ** 20 });
    expect(DELAY_LEVELS.at(-1)).toEqual({ position: 0, digit: 1, seconds: 1 });
    expect(DELAY_LEVELS.map((level) => level.seconds)).toEqual([...DELAY_LEVELS.map((level) => level.seconds)].sort((x, y) => y - x));
    expect(DELAY_LEVELS.find((level) => level.seconds === 240)).toEqual({ position: 1, digit: 15, seconds: 240 });
    expect(levelTtlMs(240)).toBe(240_000);
  });
});

describe('levelsVisited', () => {
  it('is one level per non-zero hexadecimal digit, lowest first', () => {
    expect(levelsVisited(0)).toEqual([]);
    expect(levelsVisited(15)).toEqual([15]);
    expect(levelsVisited(60)).toEqual([12, 48]);
    expect(levelsVisited(120)).toEqual([8, 112]);
    expect(levelsVisited(21_600)).toEqual([96, 1_024, 20_480]);
    expect(levelsVisited(MAX_SECONDS)).toHaveLength(6);
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

  it('is the whole seconds less the lead for any sub-second remainder', () => {
    const random = mulberry32(99);
    for (let i = 0; i < 500; i += 1) {
      const delayMs = randomInt(random, 0, 100_000_000);
      expect(levelDelaySeconds(delayMs)).toBe(Math.max(0, Math.floor((delayMs - LEVEL_LEAD_MS) / 1_000)));
    }
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
  it('spells the seconds in hex, one word x0 … xf per digit, highest first: what the relay publishes', () => {
    expect(delayRoutingKey(0)).toBe(Array(6).fill('x0').join('.'));
    expect(delayRoutingKey(60)).toBe('x0.x0.x0.x0.x3.xc');
    expect(delayRoutingKey(21_600)).toBe('x0.x0.x5.x4.x6.x0');
    expect(delayRoutingKey(MAX_SECONDS)).toBe(`x3${'.xf'.repeat(5)}`);
  });

  it('spells the seconds in binary, 22 words, highest level first: the first wire contract', () => {
    expect(delayRoutingKey(0, 'binary')).toBe(Array(22).fill('0').join('.'));
    expect(delayRoutingKey(1, 'binary')).toBe(`${'0.'.repeat(21)}1`);
    expect(delayRoutingKey(5, 'binary')).toBe(`${'0.'.repeat(19)}1.0.1`);
    expect(delayRoutingKey(2 ** 21, 'binary')).toBe(`1${'.0'.repeat(21)}`);
    expect(delayRoutingKey(MAX_SECONDS, 'binary')).toBe(Array(22).fill('1').join('.'));
  });

  it('always has 22 words of 0 or 1, or 6 of x0 … xf, within the range, both reading the same number', () => {
    const random = mulberry32(1);
    for (let i = 0; i < 500; i += 1) {
      const seconds = randomInt(random, 0, MAX_SECONDS);
      const bits = delayRoutingKey(seconds, 'binary').split('.');
      expect(bits).toHaveLength(22);
      expect(bits.every((word) => word === '0' || word === '1')).toBe(true);
      expect(parseInt(bits.join(''), 2)).toBe(seconds);
      const digits = delayRoutingKey(seconds).split('.');
      expect(digits).toHaveLength(6);
      expect(digits.every((word) => /^x[0-9a-f]$/.test(word))).toBe(true);
      expect(parseInt(digits.map((word) => word.slice(1)).join(''), 16)).toBe(seconds);
    }
  });
});

describe('levelRoutes', () => {
  it('from the entry exchange: the lowest non-zero digit, by its words after the higher ones (anything), zeros below, then #', () => {
    const routes = levelRoutes(0, 'binary');
    expect(routes).toHaveLength(78 + 2);
    expect(routes[0]).toEqual({ bindingKey: `${'*.'.repeat(18)}1.1.1.1.#`, to: 15 });
    expect(routes[14]).toEqual({ bindingKey: `${'*.'.repeat(18)}0.0.0.1.#`, to: 1 });
    expect(routes[15]).toEqual({ bindingKey: `${'*.'.repeat(14)}1.1.1.1.0.0.0.0.#`, to: 15 * 16 });
    expect(routes[75]).toEqual({ bindingKey: `1.1.${'0.'.repeat(20)}#`, to: 3 * 2 ** 20 });
    expect(routes[77]).toEqual({ bindingKey: `0.1.${'0.'.repeat(20)}#`, to: 2 ** 20 });
    // The lanes' bindings are those of the radix-16 version visited highest first: an upgrade keeps them.
    expect(routes[78]).toEqual({ bindingKey: `${Array(22).fill('0').join('.')}.*`, to: 'lanes' });
    expect(routes[79]).toEqual({ bindingKey: Array(22).fill('0').join('.'), to: 'no-bucket' });
  });

  it('in hex: the same bindings, a word per digit', () => {
    const routes = levelRoutes(0, 'hex');
    expect(routes).toHaveLength(78 + 2);
    expect(routes[0]).toEqual({ bindingKey: '*.*.*.*.*.xf.#', to: 15 });
    expect(routes[15]).toEqual({ bindingKey: '*.*.*.*.xf.x0.#', to: 15 * 16 });
    expect(routes[75]).toEqual({ bindingKey: 'x3.x0.x0.x0.x0.x0.#', to: 3 * 2 ** 20 });
    expect(routes[78]).toEqual({ bindingKey: 'x0.x0.x0.x0.x0.x0.*', to: 'lanes' });
    expect(routes[79]).toEqual({ bindingKey: 'x0.x0.x0.x0.x0.x0', to: 'no-bucket' });
    expect(levelRoutes(5, 'hex')[0]).toEqual({ bindingKey: 'x3.#', to: 3 * 2 ** 20 });
    expect(levelRoutes(5, 'hex')[3]).toEqual({ bindingKey: 'x0.*.*.*.*.*.*', to: 'lanes' });
    expect(levelRoutes(DIGITS, 'hex')).toEqual([
      { bindingKey: '*.*.*.*.*.*.*', to: 'lanes' },
      { bindingKey: '*.*.*.*.*.*', to: 'no-bucket' },
    ]);
  });

  it('above digit n: the words of the digits behind (n and below) match anything', () => {
    expect(levelRoutes(DIGITS, 'binary')).toEqual([
      { bindingKey: `${'*.'.repeat(22)}*`, to: 'lanes' },
      { bindingKey: `${'*.'.repeat(21)}*`, to: 'no-bucket' },
    ]);
    expect(levelRoutes(5, 'binary')[0]).toEqual({ bindingKey: '1.1.#', to: 3 * 2 ** 20 });
    expect(levelRoutes(5, 'binary')[3]).toEqual({ bindingKey: `0.0.${'*.'.repeat(20)}*`, to: 'lanes' });
    expect(levelRoutes(1, 'binary')[0]).toEqual({ bindingKey: `${'*.'.repeat(14)}1.1.1.1.#`, to: 15 * 16 });
    expect(levelRoutes(1, 'binary')[15]).toEqual({ bindingKey: `${'*.'.repeat(10)}1.1.1.1.0.0.0.0.#`, to: 15 * 256 });
  });

  it('routes a single level straight to it, in either spelling', () => {
    for (const spelling of KEY_SPELLINGS) {
      for (const level of DELAY_LEVELS) {
        const only = `${delayRoutingKey(level.seconds, spelling)}.3`;
        expect(
          levelRoutes(0, spelling)
            .filter((route) => topicMatches(route.bindingKey, only))
            .map((route) => route.to),
        ).toEqual([level.seconds]);
      }
    }
  });

  it('has one binding per level ahead, and the lanes', () => {
    for (const spelling of KEY_SPELLINGS) {
      for (let bottom = 0; bottom <= DIGITS; bottom += 1) {
        expect(levelRoutes(bottom, spelling)).toHaveLength(DELAY_LEVELS.filter((level) => level.position >= bottom).length + 2);
      }
    }
  });

  it('never routes a key of one spelling by a binding of the other, at any exchange', () => {
    const random = mulberry32(7);
    const seconds = [
      0,
      1,
      15,
      16,
      60,
      65_536,
      0x10101,
      0x111111,
      0x311111,
      MAX_SECONDS,
      ...Array.from({ length: 300 }, () => randomInt(random, 0, MAX_SECONDS)),
    ];
    for (let bottom = 0; bottom <= DIGITS; bottom += 1) {
      for (const [key, other] of [
        ['hex', 'binary'],
        ['binary', 'hex'],
      ] as const) {
        const bindings = levelRoutes(bottom, other).map((route) => route.bindingKey);
        for (const s of seconds) {
          for (const routingKey of [delayRoutingKey(s, key), `${delayRoutingKey(s, key)}.17`]) {
            expect(
              bindings.filter((binding) => topicMatches(binding, routingKey)),
              `${routingKey} at ${bottom}`,
            ).toEqual([]);
          }
        }
      }
    }
  });
});
