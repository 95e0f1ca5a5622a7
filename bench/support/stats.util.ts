/**
 * Small statistics for the bench scripts: median, quantiles, a seeded random source, a shuffle and
 * a percentile-bootstrap interval. Latency distributions are not kept here: they go into
 * `perf_hooks` histograms (see open-loop.util.ts).
 */

/** The median; for an even count, the mean of the two middle values. NaN for no values. */
export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

/**
 * The q-quantile (0..1) by linear interpolation between the closest ranks (the R-7 / Excel
 * definition): p99 of 1..100 is 99.01, the median of 1..4 is 2.5. Values need not be sorted.
 */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const at = Math.min(1, Math.max(0, q)) * (sorted.length - 1);
  const below = Math.floor(at);
  const lower = sorted[below]!;
  const upper = sorted[Math.min(below + 1, sorted.length - 1)]!;
  return lower + (upper - lower) * (at - below);
}

/** A seeded source of uniform numbers in [0, 1) (mulberry32): the same seed, the same run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A shuffled copy (Fisher–Yates) drawn from `random`. */
export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** A statistic of some samples with its 95 % interval. */
export interface Estimate {
  readonly value: number;
  readonly low: number;
  readonly high: number;
}

/**
 * The median of `values` with a 95 % percentile-bootstrap interval: `resamples` times, draw
 * values.length values with replacement and take their median; the interval runs from the 2.5th
 * to the 97.5th percentile of those medians. With few samples the interval is wide and coarse
 * (with 5 rounds it is about the smallest to the largest), which is what it should say.
 */
export function bootstrapMedian(
  values: readonly number[],
  random: () => number,
  resamples = 10_000,
): Estimate {
  const n = values.length;
  if (n === 0) return { value: NaN, low: NaN, high: NaN };
  const medians = new Array<number>(resamples);
  const draw = new Array<number>(n);
  for (let r = 0; r < resamples; r++) {
    for (let i = 0; i < n; i++) draw[i] = values[Math.floor(random() * n)]!;
    medians[r] = median(draw);
  }
  return { value: median(values), low: quantile(medians, 0.025), high: quantile(medians, 0.975) };
}

/** `1234567.8` → `'1,234,568'`. */
export function grouped(value: number, digits = 0): string {
  return value.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

/** `0.98 [0.95, 1.01]`: an estimate with its interval, in `digits` decimals. */
export function withInterval(estimate: Estimate, digits = 2, unit = ''): string {
  const f = (x: number) => `${x.toFixed(digits)}${unit}`;
  return `${f(estimate.value)} [${f(estimate.low)}, ${f(estimate.high)}]`;
}
