/*
 * The delay levels as delayLevels declares them, walked the way the broker routes: from the entry
 * exchange P.delay through the bindings, TTLs and dead-letter exchanges of the declarations
 * themselves, for today's layout and the version before's (whose levels still drain after an
 * upgrade). The arithmetic of the routes is delay-levels.test.ts's; this is their wiring.
 */
import { describe, expect, it } from 'vitest';
import type { Declaration } from '../../../src/topology/declare-list.js';
import { delayLevels } from '../../../src/topology/declare-topology.js';
import { DELAY_BITS, DELAY_LEVELS, DIGITS, delayRoutingKey, levelsVisited, type KeySpelling } from '../../../src/topology/delay-levels.js';
import { highestFirst, lowestFirst, type LevelLayout } from '../../../src/topology/level-layouts.js';
import { LANE_BUCKETS, laneBucket, laneOf, topologyNames, type TopologyNames } from '../../../src/topology/topology-names.js';
import { mulberry32, randomInt } from '../../support/prng.js';
import { topicMatcher } from '../../support/topic-matches.js';

const MAX_SECONDS = 2 ** DELAY_BITS - 1;
const names = topologyNames('p', 3);

/** What the declarations of one layout wire: each exchange's bindings, and each level queue's TTL and dead-letter target. */
interface Wiring {
  bindings: Map<string, Array<{ queue: string; key: string; matches: (routingWords: readonly string[]) => boolean }>>;
  levels: Map<string, { ttlMs: number; deadLetterExchange: string; deadLetterKey: string | undefined }>;
}

function wiringOf(declarations: readonly Declaration[]): Wiring {
  const bindings: Wiring['bindings'] = new Map();
  const levels: Wiring['levels'] = new Map();
  for (const step of declarations) {
    if (step.kind === 'exchange') bindings.set(step.name, []);
    if (step.kind === 'queue') {
      const args = step.arguments;
      levels.set(step.name, {
        ttlMs: args['x-message-ttl'] as number,
        deadLetterExchange: args['x-dead-letter-exchange'] as string,
        deadLetterKey: args['x-dead-letter-routing-key'] as string | undefined,
      });
    }
    if (step.kind === 'binding') {
      const bound = bindings.get(step.exchange);
      if (!bound) throw new Error(`binding on ${step.exchange}, not declared before it`);
      bound.push({ queue: step.queue, key: step.key, matches: topicMatcher(step.key) });
    }
  }
  return { bindings, levels };
}

/**
 * Follows a message published to P.delay with `routingKey` as the broker would: at each exchange the
 * one binding whose key matches (a topic exchange sends a copy down every binding that matches, so
 * two would deliver it twice, none drop it), into a level queue, whose message waits its TTL and is
 * dead-lettered to its exchange with the key it had, and so on until a queue that is not a level.
 */
function walk(wiring: Wiring, routingKey: string): { end: string; waitedMs: number; visited: number[]; steps: number } {
  const visited: number[] = [];
  let waitedMs = 0;
  let key = routingKey;
  let exchange = names.delayExchange;
  // One step per digit at the most, and one into the lane: more is a loop.
  for (let steps = 1; steps <= DIGITS + 1; steps += 1) {
    const bound = wiring.bindings.get(exchange);
    if (!bound) throw new Error(`${key} was dead-lettered to ${exchange}, which is not declared`);
    const words = key.split('.');
    const matched = bound.filter((binding) => binding.matches(words));
    if (matched.length !== 1)
      throw new Error(`${exchange} routes ${key} to ${matched.length} bindings: ${matched.map((b) => b.queue).join(', ')}`);
    const { queue } = matched[0]!;
    const level = wiring.levels.get(queue);
    if (!level) return { end: queue, waitedMs, visited, steps };
    waitedMs += level.ttlMs;
    visited.push(level.ttlMs / 1_000);
    exchange = level.deadLetterExchange;
    key = level.deadLetterKey ?? key;
  }
  throw new Error(`${routingKey} is still in the levels after ${DIGITS + 1} steps`);
}

/** Every second up to 5000, the powers of two and their neighbours, seeded random delays up to the maximum, and the maximum. */
function delays(): number[] {
  const random = mulberry32(0xc0ffee);
  const powers = Array.from({ length: DELAY_BITS }, (_, bit) => [2 ** bit - 1, 2 ** bit, 2 ** bit + 1]).flat();
  const all = [
    ...Array.from({ length: 5_001 }, (_, seconds) => seconds),
    ...powers,
    ...Array.from({ length: 2_000 }, () => randomInt(random, 0, MAX_SECONDS)),
    MAX_SECONDS,
  ];
  return all.filter((seconds) => seconds <= MAX_SECONDS);
}

const layouts: Array<[string, KeySpelling, (names: TopologyNames) => LevelLayout, (seconds: number) => number[]]> = [
  ["lowest digit first (today's), hex keys", 'hex', lowestFirst, (seconds) => levelsVisited(seconds)],
  ["lowest digit first (today's), binary keys", 'binary', lowestFirst, (seconds) => levelsVisited(seconds)],
  // That version's levels knew only the binary keys; what they hold still drains through them.
  ['highest digit first (the version before), binary keys', 'binary', highestFirst, (seconds) => [...levelsVisited(seconds)].reverse()],
];

describe.each(layouts)('the delay levels as declared, %s', (_name, spelling, layout, order) => {
  const declarations = delayLevels(names, 'quorum', layout(names));
  const wiring = wiringOf(declarations);
  const levelQueues = [...wiring.levels.keys()];
  const laneOfBucket = (bucket: number): string => names.workQueues[laneOf(bucket, names.workQueues.length)] as string;

  it('declare a queue per level, waiting its seconds and dead-lettering to a declared exchange with the key unchanged', () => {
    expect(levelQueues).toEqual(DELAY_LEVELS.map((level) => layout(names).queue(level.seconds)));
    for (const level of DELAY_LEVELS) {
      const declared = wiring.levels.get(layout(names).queue(level.seconds))!;
      expect(declared.ttlMs).toBe(level.seconds * 1_000);
      expect(wiring.bindings.has(declared.deadLetterExchange)).toBe(true);
      expect(declared.deadLetterKey).toBeUndefined();
    }
  });

  it("take every delay through its levels, in the layout's order, into the lane of its bucket after exactly its seconds", () => {
    const seen = new Set<number>();
    const origin = laneBucket('https://example.com');
    for (const [i, seconds] of delays().entries()) {
      // A real origin's bucket, then the others in turn, so that every lane binding is taken.
      const bucket = (origin + i) % LANE_BUCKETS;
      const trip = walk(wiring, `${delayRoutingKey(seconds, spelling)}.${bucket}`);
      expect(trip.end, `${seconds} s, bucket ${bucket}`).toBe(laneOfBucket(bucket));
      expect(trip.waitedMs, `${seconds} s`).toBe(seconds * 1_000);
      expect(trip.visited, `${seconds} s`).toEqual(order(seconds));
      expect(trip.steps).toBe(trip.visited.length + 1);
      for (const wait of trip.visited) seen.add(wait);
    }
    // Every level declared is one some delay goes through.
    expect(seen.size).toBe(levelQueues.length);
  });

  it('take a key without a bucket through the same levels into P.work', () => {
    for (const seconds of delays()) {
      const trip = walk(wiring, delayRoutingKey(seconds, spelling));
      expect(trip.end, `${seconds} s`).toBe(names.workQueue);
      expect(trip.waitedMs, `${seconds} s`).toBe(seconds * 1_000);
      expect(trip.visited, `${seconds} s`).toEqual(order(seconds));
    }
  });
});
