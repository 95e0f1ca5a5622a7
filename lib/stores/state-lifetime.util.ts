import type { Algorithm, LimitRule } from '../core/policy';

/**
 * How long a spend can still weigh on anything under a policy: the longest a state key can live.
 * The refund ledger lives this long after its last write.
 */
export function stateLifetimeMs(algorithm: Algorithm, limits: readonly LimitRule[]): number {
  let longest = 0;
  for (const { limit, windowMs, burst } of limits) {
    const lifetime =
      algorithm === 'sliding-window'
        ? 2 * windowMs // until the end of the next window
        : algorithm === 'token-bucket' || algorithm === 'gcra'
          ? Math.ceil((burst * windowMs) / limit) // until a full bucket's backlog has drained
          : windowMs;
    longest = Math.max(longest, lifetime);
  }
  return longest;
}
