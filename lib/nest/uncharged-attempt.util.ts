import { Attempt } from '../core/attempt';
import type { Decision } from '../core/decision';
import type { ResolvedPolicy } from '../core/policy';

/**
 * The `Attempt` an `@Attempt` handler receives when the module's `allow` list or `skipIf` let
 * the call through: allowed, nothing spent — a receipt with `spent: false`, cost 0 and no keys,
 * like the decision of a policy failing open — so `attempt.refund()` and settling do nothing.
 * Its `remaining` is the policy's (first) limit: the call counted against nothing. A handler can
 * tell such an attempt by `attempt.decision.receipt.spent === false`.
 *
 * @example
 * const attempt = unchargedAttempt(registry.get('login').policy);
 * attempt.refund(); // harmless
 */
export function unchargedAttempt(policy: ResolvedPolicy): Attempt {
  const rule = policy.limits[0]!;
  const decision: Decision = Object.freeze({
    allowed: true,
    remaining: rule.limit,
    limit: rule.limit,
    windowMs: rule.windowMs,
    retryAfterMs: 0,
    resetAfterMs: 0,
    policy: policy.name,
    receipt: Object.freeze({
      policy: policy.name,
      algorithm: policy.algorithm,
      limits: policy.limits,
      keys: Object.freeze([]),
      cost: 0,
      at: 0,
      spent: false,
    }),
  });
  return new Attempt(decision, () => Promise.resolve());
}
