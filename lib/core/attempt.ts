import type { Decision, StackedDecision } from './decision';
import { checkActualCost } from './keys.util';

/**
 * How a stacked attempt ({@link Limiter.beginAll}) settles: over every part of its stack. The
 * attempt's other callbacks then act on the whole stack (a refund gives every part back, an
 * adjustment settles every rate part and releases every lease, a renewal renews every lease).
 *
 * @example
 * new Attempt(stacked.decisions[0]!, () => Limiter.refundAll(stacked), undefined, undefined, {
 *   stacked,
 *   release: () => Limiter.releaseAll(stacked),
 * });
 */
export interface AttemptStack {
  /** The whole stacked decision the attempt spent (allowed). */
  readonly stacked: StackedDecision;
  /**
   * Releases the `concurrency` leases of the stack, leaving its rate parts charged (see
   * `Limiter.releaseAll`): what settling without a refund or an adjustment does.
   */
  readonly release: (stacked: StackedDecision) => Promise<unknown>;
}

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
    /** Set for a stacked attempt (see {@link AttemptStack}); absent for one policy. */
    private readonly stack?: AttemptStack,
  ) {}

  /**
   * The whole stacked decision, for an attempt begun with `Limiter.beginAll` (`decision` is then
   * its first part's); undefined for an attempt of one policy.
   */
  get stacked(): StackedDecision | undefined {
    return this.stack?.stacked;
  }

  /**
   * Whether this attempt holds a `concurrency` lease (for a stack: whether any part does): it is
   * always released when it settles.
   */
  get leased(): boolean {
    if (!this.stack) return isLease(this.decision);
    return this.stack.stacked.decisions.some(isLease);
  }

  /**
   * Renews this attempt's `concurrency` lease for another `window` from now, for long work (for a
   * stack: every part's lease).
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
   * A stacked attempt settles every rate part to `actualCost` (see `Limiter.adjustAll`) and
   * releases its leases.
   *
   * @throws RangeError when `actualCost` is not a whole number ≥ 0 (or too large for a window of
   *   any part); Error after the attempt settled
   */
  adjust(actualCost: number): void {
    if (this.settlement) {
      throw new Error('Attempt.adjust() called after the attempt was settled; the cost was kept');
    }
    for (const decision of this.stack ? this.stack.stacked.decisions : [this.decision]) {
      checkActualCost(actualCost, decision.receipt.limits, 'Attempt.adjust(): actualCost');
    }
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
   * A stacked attempt refunds every part, or settles every rate part to the adjusted cost, or
   * keeps its rate parts; its leases are released in every case. Idempotent: later calls return
   * the first settlement.
   */
  settle(): Promise<void> {
    if (this.settlement) return this.settlement;
    const pending = this.outcome();
    this.settlement = pending ? pending.then(() => undefined) : Promise.resolve();
    return this.settlement;
  }

  /** What settling sends, or undefined when the cost is simply kept. */
  private outcome(): Promise<unknown> | undefined {
    const { stack } = this;
    if (this.refundRequested) return this.giveBack(this.decision);
    if (stack) {
      if (this.actualCost !== undefined && this.settleTo) {
        return this.settleTo(this.decision, this.actualCost);
      }
      return this.leased ? stack.release(stack.stacked) : undefined;
    }
    if (this.leased) return this.giveBack(this.decision);
    return this.actualCost !== undefined && this.settleTo
      ? this.settleTo(this.decision, this.actualCost)
      : undefined;
  }
}

/** Whether a decision spent a `concurrency` lease. */
function isLease(decision: Decision): boolean {
  return decision.receipt.spent && decision.receipt.algorithm === 'concurrency';
}
