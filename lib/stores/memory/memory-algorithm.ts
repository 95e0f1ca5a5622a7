import type { LimitRule } from '../../core/policy';

/** How one (key, limit) pair would fare under a request, and the state a spend would leave. */
export interface PairEvaluation<S> {
  /** Whether `cost` fits under this limit on this key now. */
  readonly fits: boolean;
  /** Units left on this pair before the call (a spend takes `cost` off every pair alike). */
  readonly room: number;
  /** When it does not fit: the earliest wait after which it does. */
  readonly waitMs: number;
  /** Time until this pair holds nothing, with or without the spend. */
  resetMs(spent: boolean): number;
  /** State after the spend, and when it stops mattering. */
  readonly next: { readonly state: S; readonly expiresAt: number };
}

/** The in-process twin of an algorithm's Lua scripts: same arithmetic, same answers. */
export interface MemoryAlgorithm<S> {
  /** Whether a stored value is this algorithm's state (a value of another algorithm counts as empty). */
  owns(value: unknown): value is S;
  /** Evaluates one pair. */
  evaluate(state: S | undefined, rule: LimitRule, cost: number, now: number): PairEvaluation<S>;
  /**
   * Returns `cost` units to the window that contained `at`: the new state, `null` to delete, or
   * `undefined` when the charged window no longer holds anything to give back.
   */
  refund(state: S, rule: LimitRule, cost: number, at: number): S | null | undefined;
}
