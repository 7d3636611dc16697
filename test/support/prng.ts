/** mulberry32: a tiny seeded PRNG, uniform in [0, 1), so every run draws the same numbers. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A uniform integer in [min, max] drawn from `random`. */
export const randomInt = (random: () => number, min: number, max: number): number => min + Math.floor(random() * (max - min + 1));
