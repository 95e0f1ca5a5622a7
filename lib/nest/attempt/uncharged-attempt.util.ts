import { Attempt } from '../../core/attempt';
import { unchargedDecision } from '../../core/decision';
import type { ResolvedPolicy } from '../../core/policy';

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
  const decision = unchargedDecision(policy, Object.freeze([]), {
    allowed: true,
    remaining: policy.limits[0]!.limit,
    retryAfterMs: 0,
  });
  return new Attempt(decision, () => Promise.resolve());
}
