import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { delayLevels } from '../../../src/topology/declare-topology.js';
import { DIGITS, levelRoutes } from '../../../src/topology/delay-levels.js';
import { earlierLevels, highestFirst, highFirstLevelRoutes } from '../../../src/topology/level-layouts.js';
import { topologyNames } from '../../../src/topology/topology-names.js';

const names = topologyNames('p', 3);
const [binary, highFirst] = earlierLevels(names);

describe('highFirstLevelRoutes: the radix-16 levels visited highest digit first (the version before; level-wiring.test.ts walks them as declared)', () => {
  it('are the bindings that version declared, key for key', () => {
    // The digest of that version's levelRoutes(top) for top −1 … 5: an upgrade unbinds these keys exactly.
    const routes = JSON.stringify([-1, 0, 1, 2, 3, 4, 5].map(highFirstLevelRoutes));
    expect(createHash('sha256').update(routes).digest('hex').slice(0, 16)).toBe('1f7718eaecedc248');
    expect(highFirstLevelRoutes(DIGITS - 1)[0]).toEqual({ bindingKey: '1.1.#', to: 3 * 2 ** 20 });
    expect(highFirstLevelRoutes(DIGITS - 1)[77]).toEqual({ bindingKey: `${'0.'.repeat(21)}1.#`, to: 1 });
    expect(highFirstLevelRoutes(0)[0]).toEqual({ bindingKey: `${'*.'.repeat(18)}1.1.1.1.#`, to: 15 });
  });

  it('as a layout, declare what that version declared, call for call (an upgrade test sets that version up with it)', () => {
    const digest = (queueType: 'quorum' | 'classic') =>
      createHash('sha256')
        .update(JSON.stringify(delayLevels(names, queueType, highestFirst(names))))
        .digest('hex')
        .slice(0, 16);
    expect(digest('quorum')).toBe('b1e134daea8caeb8');
    expect(digest('classic')).toBe('be23ef2b99a2072e');
  });
});

describe('earlierLevels: what an upgrade unbinds from P.delay', () => {
  it('one level per bit: each bit queue by its word 1 after zeros', () => {
    expect(binary!.probe).toBe('p.delay.00');
    expect(binary!.label).toBe('p.delay.21 … p.delay.00');
    expect(binary!.queues).toEqual(names.binaryLevels.queues);
    expect(binary!.bindings).toHaveLength(22);
    expect(binary!.bindings[0]).toEqual({ queue: 'p.delay.21', key: '1.#' });
    expect(binary!.bindings[21]).toEqual({ queue: 'p.delay.00', key: `${'0.'.repeat(21)}1.#` });
  });

  it('radix 16 highest first: exactly the old P.delay bindings that target a level, each to its own queue', () => {
    expect(highFirst!.probe).toBe('p.delay.1s');
    expect(highFirst!.label).toBe('p.delay.3145728s … p.delay.1s');
    const toLevels = highFirstLevelRoutes(DIGITS - 1).filter((route) => typeof route.to === 'number');
    expect(highFirst!.bindings).toEqual(
      toLevels.map((route) => ({ queue: names.highFirstLevels.queue(route.to as number), key: route.bindingKey })),
    );
    expect(highFirst!.bindings.map(({ queue }) => queue)).toEqual(names.highFirstLevels.queues);
    expect(highFirst!.queues).toEqual(names.highFirstLevels.queues);
    expect(highFirst!.bindings.find(({ queue }) => queue === 'p.delay.48s')).toEqual({
      queue: 'p.delay.48s',
      key: `${'0.'.repeat(16)}1.1.#`,
    });
  });

  it("leaves the old P.delay bindings to the lanes, which are the new entry exchange's too, and every binding P.delay has now", () => {
    const lanes = (routes: ReturnType<typeof levelRoutes>) => routes.filter((route) => typeof route.to !== 'number');
    expect(lanes(highFirstLevelRoutes(DIGITS - 1))).toEqual(lanes(levelRoutes(0, 'binary')));
    const unbound = new Set([...binary!.bindings, ...highFirst!.bindings].map(({ queue, key }) => `${queue} ${key}`));
    const now = delayLevels(names, 'quorum').flatMap((step) =>
      step.kind === 'binding' && step.exchange === names.delayExchange ? [`${step.queue} ${step.key}`] : [],
    );
    // Each level and the lanes, for keys of either spelling; the ordered shards for hex keys.
    expect(now).toHaveLength(2 * (78 + 64 + 1) + 64);
    for (const binding of now) expect(unbound.has(binding)).toBe(false);
  });
});
