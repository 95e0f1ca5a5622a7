import type {
  Algorithm,
  AlgorithmDefinition,
  LimitRule,
  RateAlgorithm,
} from './algorithm-definition';
import { concurrencyAlgorithm } from './concurrency.algorithm';
import { fixedWindowAlgorithm } from './fixed-window.algorithm';
import { gcraAlgorithm } from './gcra.algorithm';
import { slidingLogAlgorithm } from './sliding-log.algorithm';
import { slidingWindowAlgorithm } from './sliding-window.algorithm';
import { tokenBucketAlgorithm } from './token-bucket.algorithm';

/**
 * Every algorithm's definition, by name, in documentation order (the rate algorithms, then
 * `concurrency`). The mapped type makes a name of {@link Algorithm} without an entry a compile
 * error.
 */
export const ALGORITHM_DEFINITIONS: { readonly [A in Algorithm]: AlgorithmDefinition<A> } = {
  'fixed-window': fixedWindowAlgorithm,
  'sliding-window': slidingWindowAlgorithm,
  'token-bucket': tokenBucketAlgorithm,
  gcra: gcraAlgorithm,
  'sliding-log': slidingLogAlgorithm,
  concurrency: concurrencyAlgorithm,
};

/** Every algorithm a policy can use, in {@link ALGORITHM_DEFINITIONS} order. */
export const ALGORITHM_NAMES: readonly Algorithm[] = Object.freeze(
  Object.keys(ALGORITHM_DEFINITIONS) as Algorithm[],
);

/** The rate algorithms (kind `rate`), in {@link ALGORITHM_DEFINITIONS} order. */
export const RATE_ALGORITHM_NAMES: readonly RateAlgorithm[] = Object.freeze(
  ALGORITHM_NAMES.filter(
    (name): name is RateAlgorithm => ALGORITHM_DEFINITIONS[name].kind === 'rate',
  ),
);

/**
 * The definition of a (validated) algorithm name.
 *
 * @example
 * algorithmDefinition('gcra').usesBurst; // true
 */
export function algorithmDefinition(name: Algorithm): AlgorithmDefinition {
  return ALGORITHM_DEFINITIONS[name];
}

/**
 * How long a spend can still weigh on anything under a policy: the longest a state key can live
 * (the longest of its limits' lifetimes). The refund ledger lives this long after its last write.
 *
 * @example
 * stateLifetimeMs('sliding-window', [{ limit: 10, windowMs: 1000, burst: 10 }]); // 2000
 */
export function stateLifetimeMs(algorithm: Algorithm, limits: readonly LimitRule[]): number {
  const { lifetimeMs } = ALGORITHM_DEFINITIONS[algorithm];
  let longest = 0;
  for (const rule of limits) longest = Math.max(longest, lifetimeMs(rule));
  return longest;
}
