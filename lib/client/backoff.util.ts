/**
 * Exponential backoff with full jitter: a random wait in [0, min(`maxDelayMs`, `baseDelayMs` ·
 * 2^`retryIndex`, `limitMs`)], whole ms. Full jitter spreads clients that were refused together,
 * so they do not come back together.
 *
 * @param retryIndex 0 for the first retry, 1 for the second, …
 * @param random a number in [0, 1)
 * @param limitMs a further cap, e.g. what is left of the time budget
 * @example
 * fullJitterDelayMs(2, 200, 10_000, Math.random); // somewhere in [0, 800)
 */
export function fullJitterDelayMs(
  retryIndex: number,
  baseDelayMs: number,
  maxDelayMs: number,
  random: () => number,
  limitMs = Number.POSITIVE_INFINITY,
): number {
  const capMs = Math.max(0, Math.min(maxDelayMs, baseDelayMs * 2 ** retryIndex, limitMs));
  const fraction = Math.min(Math.max(random(), 0), 1);
  return Math.floor(fraction * capMs);
}
