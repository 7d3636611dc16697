/** The p-th percentile (nearest rank) of `values`; NaN when empty. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return nearestRank(sorted, p);
}

const nearestRank = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;

export interface Summary {
  count: number;
  min: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

/** Count, p50, p99, p99.9, max and mean of `values` (one sort). */
export function summarize(values: number[]): Summary {
  const sorted = Float64Array.from(values).sort();
  const list = Array.from(sorted);
  const sum = list.reduce((a, b) => a + b, 0);
  return {
    count: list.length,
    min: list.length ? (list[0] as number) : Number.NaN,
    p50: nearestRank(list, 50),
    p99: nearestRank(list, 99),
    p999: nearestRank(list, 99.9),
    max: list.length ? (list[list.length - 1] as number) : Number.NaN,
    mean: list.length ? sum / list.length : Number.NaN,
  };
}

/** The median of `values` (the mean of the middle two of an even count); NaN when empty. */
export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A number for a table; a value that rounds to zero prints without a sign (not "-0"). */
export const fmt = (n: number | undefined, digits = 0): string => {
  if (n === undefined || !Number.isFinite(n)) return 'n/a';
  const text = n.toFixed(digits);
  return Number(text) === 0 ? text.replace(/^-/, '') : text;
};
