/*
 * The layouts of the delay levels (pure: no broker): today's radix-16 levels visited lowest digit
 * first, and those of earlier versions, with which of P.delay's bindings led into them, so that an
 * upgrade unbinds exactly those (retire-earlier-levels.ts). declare-topology.ts declares a layout.
 */
import { DIGITS, KEY_SPELLINGS, digitRoutes, levelRoutes, type LevelRoute } from './delay-levels.js';
import type { TopologyNames } from './topology-names.js';

/**
 * The names and routes of one set of radix-16 levels: today's (lowestFirst), or an earlier version's
 * (highestFirst), which an upgrade test declares as that version did.
 */
export interface LevelLayout {
  queue: (seconds: number) => string;
  /** The exchange the levels of digit `position` dead-letter into. */
  exchange: (position: number) => string;
  /** The bindings of that exchange, or of the entry exchange P.delay. */
  routes: (from: number | 'entry') => LevelRoute[];
}

/**
 * Today's levels: lowest digit first, so a level at position n hands its messages on to the digits
 * above n; bound for keys of both spellings (hex, and the first wire contract's binary).
 */
export const lowestFirst = (names: TopologyNames): LevelLayout => ({
  queue: names.delayLevel,
  exchange: names.delayLevelExchange,
  routes: (from) => KEY_SPELLINGS.flatMap((spelling) => levelRoutes(from === 'entry' ? 0 : from + 1, spelling)),
});

/**
 * The bindings of an exchange of the radix-16 levels visited highest digit first, with digits `top` … 0
 * still ahead: P.delay had all of them ahead (DIGITS − 1), and a level at position n dead-lettered into
 * the exchange with n − 1 … 0 ahead (−1: none, only the lanes).
 */
export function highFirstLevelRoutes(top: number): LevelRoute[] {
  // That version knew only the binary keys.
  return digitRoutes(
    Array.from({ length: top + 1 }, (_, i) => top - i),
    'binary',
  );
}

/**
 * The radix-16 levels visited highest digit first (the version before), as that version declared
 * them. Nothing declares it now: it is exported for the upgrade test that sets that version up
 * (delayLevels with this layout), and earlierLevels reads P.delay's old bindings from it.
 */
export const highestFirst = (names: TopologyNames): LevelLayout => ({
  queue: names.highFirstLevels.queue,
  exchange: names.highFirstLevels.exchange,
  routes: (from) => highFirstLevelRoutes(from === 'entry' ? DIGITS - 1 : from - 1),
});

/** One binding of the entry exchange P.delay to a level queue. */
export interface EntryBinding {
  queue: string;
  key: string;
}

/** The levels of one earlier version, as an upgrade finds and retires them. */
export interface EarlierLevels {
  /** Its queues for a log line, highest first: `P.delay.21 … P.delay.00`. */
  label: string;
  /** A queue every prefix of that version has (its lowest level): missing, the prefix never had them. */
  probe: string;
  /** Its level queues, highest first. */
  queues: string[];
  /** P.delay's binding of each of its level queues, one per queue. */
  bindings: EntryBinding[];
}

/**
 * The earlier versions, oldest first. P.delay's bindings to the lanes (a key with every digit 0) were
 * the same in the radix-16 version as they are now, so only the bindings to a level are the old
 * version's own: those to the lanes stay.
 */
export function earlierLevels(names: TopologyNames): EarlierLevels[] {
  const range = (queues: string[]): string => `${queues[0]} … ${queues.at(-1)}`;
  const { binaryLevels, highFirstLevels } = names;
  return [
    {
      // One level per bit: P.delay bound each by its bit's word 1 after zeros for the higher bits.
      label: range(binaryLevels.queues),
      probe: binaryLevels.queues.at(-1) as string,
      queues: binaryLevels.queues,
      bindings: binaryLevels.queues.map((queue, i) => ({ queue, key: [...Array<string>(i).fill('0'), '1', '#'].join('.') })),
    },
    {
      label: range(highFirstLevels.queues),
      probe: highFirstLevels.queues.at(-1) as string,
      queues: highFirstLevels.queues,
      bindings: highestFirst(names)
        .routes('entry')
        .flatMap(({ bindingKey, to }) => (typeof to === 'number' ? [{ queue: highFirstLevels.queue(to), key: bindingKey }] : [])),
    },
  ];
}
