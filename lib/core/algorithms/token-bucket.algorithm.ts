import type { AlgorithmDefinition, LimitRule } from './algorithm-definition';

/** How long a full bucket's backlog takes to drain: a bucket's state lifetime (token bucket, GCRA). */
export function bucketLifetimeMs({ limit, windowMs, burst }: LimitRule): number {
  return Math.ceil((burst * windowMs) / limit);
}

/**
 * `token-bucket`: `burst` tokens (default `limit`), refilled at `limit` per `window`. Lua:
 * `lua/token-bucket/`.
 */
export const tokenBucketAlgorithm: AlgorithmDefinition<'token-bucket'> = {
  name: 'token-bucket',
  kind: 'rate',
  usesBurst: true,
  keepsSpendIds: false,
  lifetimeMs: bucketLifetimeMs,
};
