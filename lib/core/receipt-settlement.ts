import { monotonicNow } from './clock.util';
import type { Deadlines } from './deadlines';
import type { Receipt } from './decision';
import { adjustEvent, type DecisionEvents, refundEvent } from './events';
import type { Store } from './store';

// Settling one allowed spend by its receipt, once checked (`Limiter.refund`, `adjust`, `extend`):
// which store it goes to (the memory fallback's spends go back there), at most once per receipt
// object in this process, bounded by the limiter's deadline, reported to the decision events.

/** What settling uses of the limiter that spent a receipt. */
export interface SettlingLimiter {
  /** The store that spent a receipt: the store, or the memory fallback (undefined if never made). */
  storeOf(receipt: Receipt): Store | undefined;
  /** Bounds calls on the store (not on the in-process fallback). */
  readonly deadlines: Deadlines;
  /** The decision events, if any. */
  readonly events: DecisionEvents | undefined;
}

/** Receipts already refunded (or being refunded) in this process: a receipt refunds once. */
const settledReceipts = new WeakSet<Receipt>();

/** Receipts already adjusted (or being adjusted) in this process: a receipt adjusts once. */
const adjustedReceipts = new WeakSet<Receipt>();

/**
 * Refunds a checked receipt (`Limiter.refund`).
 *
 * @returns whether a refund was sent (false: nothing spent, or already refunded in this process)
 */
export async function refundReceipt(receipt: Receipt, limiter: SettlingLimiter): Promise<boolean> {
  if (!receipt.spent || settledReceipts.has(receipt)) return false;
  // Marked before sending and never unmarked: a refund that failed or timed out may still have
  // been applied, so trying it again could give back twice. A lost refund only keeps a cost.
  settledReceipts.add(receipt);
  const events = limiter.events;
  const started = events?.active ? monotonicNow() : 0;
  if (receipt.fallback) {
    await limiter.storeOf(receipt)?.refund({ ...receipt });
  } else {
    await limiter.deadlines.race(limiter.storeOf(receipt)!.refund({ ...receipt }));
  }
  if (events?.active) {
    events.emit(refundEvent(receipt.policy, receipt.keys, monotonicNow() - started));
  }
  return true;
}

/**
 * Settles a checked receipt to `actualCost` (`Limiter.adjust`; the cost already checked).
 *
 * @returns whether the adjustment was sent (false: nothing spent, already refunded or adjusted)
 * @throws TypeError for a lease, or a store without adjustments; before the store is touched
 */
export async function adjustReceipt(
  receipt: Receipt,
  actualCost: number,
  limiter: SettlingLimiter,
): Promise<boolean> {
  if (receipt.algorithm === 'concurrency') {
    throw new TypeError(
      `adjust(): policy '${receipt.policy}' leases (concurrency): release or extend a lease, it has no cost to settle`,
    );
  }
  const store = limiter.storeOf(receipt);
  if (typeof store?.adjust !== 'function') {
    throw new TypeError(
      'adjust(): this store cannot adjust a spend (it has no adjust method); refund it instead',
    );
  }
  if (!receipt.spent || settledReceipts.has(receipt) || adjustedReceipts.has(receipt)) {
    return false;
  }
  // Marked before sending, as a refund is: an adjustment is applied at most once.
  adjustedReceipts.add(receipt);
  const events = limiter.events;
  const started = events?.active ? monotonicNow() : 0;
  const request = { ...receipt, actualCost };
  await (receipt.fallback ? store.adjust(request) : limiter.deadlines.race(store.adjust(request)));
  if (events?.active) {
    events.emit(adjustEvent(receipt.policy, receipt.keys, monotonicNow() - started));
  }
  return true;
}

/**
 * Renews the lease of a checked receipt (`Limiter.extend`).
 *
 * @returns true when the whole lease was still held and is renewed
 * @throws TypeError when the receipt is no lease or the store cannot extend leases
 */
export function extendReceipt(receipt: Receipt, limiter: SettlingLimiter): Promise<boolean> {
  if (receipt.algorithm !== 'concurrency') {
    throw new TypeError(
      `extend(): policy '${receipt.policy}' is '${receipt.algorithm}'; only concurrency leases are extended`,
    );
  }
  const store = limiter.storeOf(receipt);
  if (typeof store?.extend !== 'function') {
    throw new TypeError('extend(): this store cannot extend a lease (it has no extend method)');
  }
  if (!receipt.spent || settledReceipts.has(receipt)) return Promise.resolve(false);
  const extended = store.extend({ ...receipt });
  return receipt.fallback ? extended : limiter.deadlines.race(extended);
}
