import type { Decision } from './decision';

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
  private settlement?: Promise<void>;

  constructor(
    /** The allowed decision this attempt spent. */
    readonly decision: Decision,
    private readonly giveBack: (decision: Decision) => Promise<unknown>,
  ) {}

  /** Marks the spend for refund; applied when the attempt settles. Calling it twice is harmless. */
  refund(): void {
    if (this.settlement) {
      throw new Error('Attempt.refund() called after the attempt was settled; the cost was kept');
    }
    this.refundRequested = true;
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
   * Applies the outcome: refunds the spend if {@link refund} was called, else keeps the cost.
   * Idempotent: later calls return the first settlement.
   */
  settle(): Promise<void> {
    this.settlement ??= this.refundRequested
      ? this.giveBack(this.decision).then(() => undefined)
      : Promise.resolve();
    return this.settlement;
  }
}
