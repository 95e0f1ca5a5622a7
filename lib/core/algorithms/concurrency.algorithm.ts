import type { AlgorithmDefinition } from './algorithm-definition';
import { MAX_SLIDING_LOG_LIMIT } from './sliding-log.algorithm';

/**
 * `concurrency`: at most `limit` leases in flight per key, stored as a sliding log (one entry per
 * unit leased), each released by a refund or expiring after `window`. One limit, no lockout. Lua:
 * `lua/concurrency/` (with `extend.lua`).
 */
export const concurrencyAlgorithm: AlgorithmDefinition<'concurrency'> = {
  name: 'concurrency',
  kind: 'lease',
  usesBurst: false,
  keepsSpendIds: true,
  lifetimeMs: ({ windowMs }) => windowMs,
  checkLimits({ policy, limits, paths }) {
    if (limits.length > 1) {
      throw new RangeError(
        `policy '${policy}': a concurrency policy has one limit (the leases in flight, window the lease); ` +
          'stack it with a rate policy (Limiter.consumeAll) for more',
      );
    }
    limits.forEach((rule, index) => {
      if (rule.limit > MAX_SLIDING_LOG_LIMIT) {
        throw new RangeError(
          `${paths[index]!}.limit: concurrency keeps one entry per unit leased, so its limit is at most ` +
            `${MAX_SLIDING_LOG_LIMIT}; got ${rule.limit}`,
        );
      }
    });
  },
  checkBlock(policy) {
    // A lockout that forgot the count would free leases still held; one that did not would only
    // refuse callers the leases already refuse.
    throw new RangeError(
      `policy '${policy}': policy.block does not apply to a concurrency policy (a lockout must never ` +
        'free leases still held); stack a rate policy with block beside it (Limiter.consumeAll)',
    );
  },
};
