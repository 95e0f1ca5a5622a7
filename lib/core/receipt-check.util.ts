import type { Decision, Receipt } from './decision';
import type { LimitRule, ResolvedPolicy } from './policy';
import type { ReceiptSigner } from './receipt-mac.util';
import { isList } from './values.util';

/**
 * A spend id as the stores issue them (see `lib/stores/spend-id.util.ts`): a per-process tag and
 * a counter, in base64url characters. Anything else (a ledger marker's name, '=' of an adjusted
 * entry) is no spend id.
 */
const SPEND_ID = /^[A-Za-z0-9_-]{9,32}$/;

/**
 * The receipt of a refund, adjustment or renewal, checked before the store is touched: it belongs
 * to `policy` and is as a store returned it (a spent receipt's fields well-formed, its spend id as
 * the stores issue them, its mac matching when the limiter has a `receiptSecret`).
 *
 * @throws TypeError / RangeError naming the operation and what is wrong with the receipt
 * @example
 * const receipt = checkReceipt(decision, 'refund', limiter.policy, undefined);
 */
export function checkReceipt(
  target: Decision | Receipt,
  operation: 'refund' | 'adjust' | 'extend',
  policy: ResolvedPolicy,
  signer: ReceiptSigner | undefined,
): Receipt {
  const receipt = isDecision(target) ? target.receipt : target;
  if (!receipt || typeof receipt !== 'object' || !Array.isArray(receipt.keys)) {
    throw new TypeError(`${operation}() takes a Decision or its Receipt`);
  }
  if (receipt.policy !== policy.name) {
    throw new RangeError(
      `${operation}(): the receipt belongs to policy '${receipt.policy}', not '${policy.name}'`,
    );
  }
  if (!receipt.spent) return receipt;
  if (receipt.algorithm !== policy.algorithm) {
    throw new TypeError(
      `${operation}(): the receipt's algorithm '${String(receipt.algorithm)}' is not the policy's ('${policy.algorithm}')`,
    );
  }
  if (!Number.isSafeInteger(receipt.cost) || receipt.cost < 1) {
    throw new RangeError(
      `${operation}(): the receipt's cost must be a whole number of at least 1; pass the Receipt as it was returned`,
    );
  }
  const limits: unknown = receipt.limits;
  const whole = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 1;
  if (
    !isList(limits) ||
    limits.length === 0 ||
    !limits.every((rule) => {
      const { limit, windowMs, burst } = (rule ?? {}) as Partial<LimitRule>;
      // As a policy's: exact in Lua numbers (a bucket's lifetime is burst × window / limit).
      return (
        whole(limit) &&
        whole(windowMs) &&
        whole(burst) &&
        limit! * windowMs! <= Number.MAX_SAFE_INTEGER &&
        burst! * windowMs! <= Number.MAX_SAFE_INTEGER
      );
    })
  ) {
    throw new TypeError(
      `${operation}(): the receipt's limits must be as they were returned ({ limit, windowMs, burst } whole numbers, limit × windowMs and burst × windowMs below 2^53)`,
    );
  }
  const atByKey: unknown = receipt.atByKey;
  if (
    !Number.isSafeInteger(receipt.at) ||
    receipt.at < 0 ||
    !receipt.keys.every((key) => typeof key === 'string' && key !== '') ||
    (atByKey !== undefined &&
      (!isList(atByKey) ||
        atByKey.length !== receipt.keys.length ||
        !atByKey.every((at) => Number.isSafeInteger(at) && (at as number) >= 0)))
  ) {
    throw new TypeError(
      `${operation}(): the receipt's at, atByKey and keys must be as they were returned (instants in whole ms, non-empty keys)`,
    );
  }
  if (typeof receipt.spendId !== 'string' || !SPEND_ID.test(receipt.spendId)) {
    // The store's ledger knows a spend by its id: without it, "at most once" cannot hold.
    throw new TypeError(
      `${operation}(): the receipt has no spendId as a store issues them; pass the Receipt as it was returned`,
    );
  }
  const fallback: unknown = receipt.fallback;
  if (fallback !== undefined && typeof fallback !== 'boolean') {
    throw new TypeError(
      `${operation}(): the receipt's fallback must be true, false or absent; pass the Receipt as it was returned`,
    );
  }
  const marks: unknown = receipt.resetMarks;
  if (
    marks !== undefined &&
    (!isList(marks) ||
      marks.length !== receipt.keys.length ||
      !marks.every((mark) => Number.isSafeInteger(mark) && (mark as number) >= 0))
  ) {
    throw new TypeError(
      `${operation}(): the receipt's resetMarks must be one whole number ≥ 0 per key; pass the Receipt as it was returned`,
    );
  }
  if (signer !== undefined && !signer.verify(receipt)) {
    throw new TypeError(
      `${operation}(): the receipt's mac does not match its fields (edited, forged, or signed with another receiptSecret); pass the Receipt as it was returned`,
    );
  }
  return receipt;
}

function isDecision(target: Decision | Receipt): target is Decision {
  return typeof target === 'object' && target !== null && 'receipt' in target;
}
