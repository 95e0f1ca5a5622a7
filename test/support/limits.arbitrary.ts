import fc from 'fast-check';
import type { Algorithm, LimitOptions } from '../../lib';

/**
 * One or two limits for property tests; windows that do not divide evenly by the limit (7 per
 * 700 ms, 3 per 1 s), and for buckets a burst up to 2 above the limit.
 *
 * @param maxSingle the largest limit when there is one limit
 */
export function limitsFor(algorithm: Algorithm, maxSingle = 7): fc.Arbitrary<LimitOptions[]> {
  const bucket = algorithm === 'token-bucket' || algorithm === 'gcra';
  const limit = (min: number, max: number, window: number) =>
    fc
      .tuple(fc.integer({ min, max }), fc.integer({ min: 0, max: 2 }))
      .map(([n, extra]) => ({ limit: n, window, ...(bucket && { burst: n + extra }) }));
  return fc.oneof(
    fc.constantFrom(700, 1_000).chain((window) => limit(2, maxSingle, window).map((l) => [l])),
    fc.tuple(limit(2, 3, 500), limit(4, 6, 1_500)).map(([short, long]) => [short, long]),
  );
}
