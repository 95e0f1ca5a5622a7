import type { Decision } from './decision';
import { checkActualCost } from './keys.util';

/**
 * One spend whose cost can still be handed back: "only failures cost". Call {@link refund} when
 * the attempt proves legitimate (e.g. the password was right); the refund is applied once, when
 * the attempt settles.
 *
 * @example
 * const attempt = await limiter.begin(['ip:203.0.113.7', `email:${emailHash}`]);
 * try {
 *   if (await passwordMatches()) attempt.refund();
 * } finally {
 *   await attempt.settle();
 * }
 */
export class Attempt {
  private refundRequested = false;
  private actualCost?: number;
  private settlement?: Promise<void>;

  constructor(
    /** The allowed decision this attempt spent. */
    readonly decision: Decision,
    private readonly giveBack: (decision: Decision) => Promise<unknown>,
    /** Settles the spend to an actual cost (see `Limiter.adjust`); absent: adjusting keeps the cost. */
    private readonly settleTo?: (decision: Decision, actualCost: number) => Promise<unknown>,
    /** Renews a concurrency lease (see `Limiter.extend`); absent: nothing to renew. */
    private readonly renew?: (decision: Decision) => Promise<boolean>,
  ) {}

  /** Whether this attempt holds a `concurrency` lease: it is always released when it settles. */
  get leased(): boolean {
    return this.decision.receipt.spent && this.decision.receipt.algorithm === 'concurrency';
  }

  /**
   * Renews this attempt's `concurrency` lease for another `window` from now, for long work.
   *
   * @returns true when the whole lease was still held; false when it had expired (or nothing was
   *   leased)
   */
  extend(): Promise<boolean> {
    if (this.settlement) return Promise.resolve(false);
    return this.renew && this.leased ? this.renew(this.decision) : Promise.resolve(false);
  }

  /** Marks the spend for refund; applied when the attempt settles. Calling it twice is harmless. */
  refund(): void {
    if (this.settlement) {
      throw new Error('Attempt.refund() called after the attempt was settled; the cost was kept');
    }
    this.refundRequested = true;
  }

  /**
   * Sets what the spend actually cost, once known (tokens used, rows exported): applied when the
   * attempt settles, as `Limiter.adjust` does (less gives the difference back, more charges the
   * extra without a limit check). A later call replaces an earlier one; {@link refund} wins over it.
   *
   * @throws RangeError when `actualCost` is not a whole number ≥ 0; Error after the attempt settled
   */
  adjust(actualCost: number): void {
    if (this.settlement) {
      throw new Error('Attempt.adjust() called after the attempt was settled; the cost was kept');
    }
    checkActualCost(actualCost, this.decision.receipt.limits, 'Attempt.adjust(): actualCost');
    this.actualCost = actualCost;
  }

  /** The cost set by {@link adjust}, if it was called. */
  get adjustedTo(): number | undefined {
    return this.actualCost;
  }

  /** Whether {@link refund} was called. */
  get refunded(): boolean {
    return this.refundRequested;
  }

  /** Whether {@link settle} has been called. */
  get settled(): boolean {
    return this.settlement !== undefined;
  }

  /**
   * Applies the outcome: refunds the spend if {@link refund} was called (a `concurrency` lease is
   * always released), else settles it to the cost given to {@link adjust}, else keeps the cost.
   * Idempotent: later calls return the first settlement.
   */
  settle(): Promise<void> {
    this.settlement ??=
      this.refundRequested || this.leased
        ? this.giveBack(this.decision).then(() => undefined)
        : this.actualCost !== undefined && this.settleTo
          ? this.settleTo(this.decision, this.actualCost).then(() => undefined)
          : Promise.resolve();
    return this.settlement;
  }
}
