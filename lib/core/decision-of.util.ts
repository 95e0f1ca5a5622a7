import type { Decision, Receipt, StoreFailure } from './decision';
import type { ReceiptSigner } from './receipt-mac.util';
import type { SpendRequest, SpendResult } from './store';

/**
 * The decision a store's answer to one request gives, with its receipt (signed by `signer` when
 * the limiter has a `receiptSecret`): frozen, with only the fields that apply.
 *
 * @param spend whether the request was a spend (a peek's receipt spends nothing)
 * @param failure set when the store failed and the fail mode's fallback answered
 * @param warnAt the policy's soft limit, a fraction of the binding limit's capacity
 * @example
 * decisionOf(request, await store.consume(request), true, undefined, 0.8, undefined).warning;
 */
export function decisionOf(
  request: SpendRequest,
  result: SpendResult,
  spend: boolean,
  failure: StoreFailure | undefined,
  warnAt: number | undefined,
  signer: ReceiptSigner | undefined,
): Decision {
  const rule =
    (result.limitIndex >= 0 ? request.limits[result.limitIndex] : undefined) ?? request.limits[0]!;
  const spent = spend && result.allowed;
  const receipt: { -readonly [K in keyof Receipt]: Receipt[K] } = {
    policy: request.policy,
    algorithm: request.algorithm,
    limits: request.limits,
    keys: request.keys,
    cost: spent ? request.cost : 0,
    at: result.at,
    spent,
  };
  if (spent && result.spendId !== undefined) receipt.spendId = result.spendId;
  if (spent && result.atByKey !== undefined) receipt.atByKey = result.atByKey;
  if (spent && result.resetMarks !== undefined) receipt.resetMarks = result.resetMarks;
  if (failure) receipt.fallback = true;
  if (spent && signer !== undefined) receipt.mac = signer.sign(receipt);
  // -1 (none) is no index: read as a property, it would search the array's prototype chain.
  const blockedKey = result.blockedKeyIndex >= 0 ? request.keys[result.blockedKeyIndex] : undefined;
  const decision: { -readonly [K in keyof Decision]: Decision[K] } = {
    allowed: result.allowed,
    remaining: Math.max(0, result.remaining),
    limit: rule.limit,
    windowMs: rule.windowMs,
    retryAfterMs: result.retryAfterMs,
    resetAfterMs: result.resetAfterMs,
    policy: request.policy,
    receipt: Object.freeze(receipt),
  };
  if (blockedKey !== undefined) {
    decision.blockedBy = Object.freeze({
      key: blockedKey,
      limit: rule.limit,
      windowMs: rule.windowMs,
    });
  }
  if (failure) decision.failure = failure;
  if (!result.allowed && result.blockedUntil !== undefined) {
    decision.blockedUntil = result.blockedUntil;
  }
  if (result.cached) decision.cached = true;

  // Soft limit, on the binding limit's capacity (burst for buckets): the 8th of 10 at 0.8.
  if (
    warnAt !== undefined &&
    result.allowed &&
    rule.burst - Math.max(0, result.remaining) >= Math.ceil(warnAt * rule.burst - 1e-9)
  ) {
    decision.warning = true;
  }
  return Object.freeze(decision);
}
