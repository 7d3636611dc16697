/**
 * Milliseconds each named step of a start took, each counted from the end of the one before; `last`
 * ends the final step and returns them all, once (a reconnect's setup logs no start).
 */
export function startSteps(clock: () => number) {
  let since = clock();
  let taken: Record<string, number> | undefined = {};
  const done = (step: string): void => {
    const now = clock();
    if (taken) taken[step] = now - since;
    since = now;
  };
  return {
    done,
    last(step: string): Record<string, number> | undefined {
      done(step);
      const all = taken;
      taken = undefined;
      return all;
    },
  };
}
