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
  next(): StoredState<S>;
  /**
   * Set when the state belongs to a window later than `now` (the clock stepped back): the start of
   * that window. The store then evaluates again at that instant (time is never earlier than the
   * state has seen) and the other fields do not count.
   */
  readonly seen?: number;
}

/** A state and the instant (store clock) after which it no longer matters. */
export interface StoredState<S> {
  readonly state: S;
  readonly expiresAt: number;
}

/** What a spend or refund is about. */
export interface SpendContext {
  /** Units charged (or to give back). */
  readonly cost: number;
  /** The store clock now. */
  readonly now: number;
  /** The spend's id, for algorithms that store per-spend entries. */
  readonly spendId?: string;
}

/** What a refund or an adjustment is about: the spend at `at`. */
export interface SettleContext extends SpendContext {
  /** The spend's instant. */
  readonly at: number;
  /** Units of the spend that stay below those given back or added (0 for a whole refund). */
  readonly keep: number;
  /** Units the spend was charged when it was made (sliding log names its entries after it). */
  readonly reserved: number;
}

/** The in-process twin of an algorithm's Lua scripts: same arithmetic, same answers. */
export interface MemoryAlgorithm<S> {
  /** Whether a stored value is this algorithm's state (a value of another algorithm counts as empty). */
  owns(value: unknown): value is S;
  /** Evaluates one pair. */
  evaluate(state: S | undefined, rule: LimitRule, spend: SpendContext): PairEvaluation<S>;
  /**
   * Gives back `cost` units of what the spend at `at` took (above its `keep` units): the new state,
   * `null` to delete, or `undefined` when nothing is left to give back.
   */
  refund(state: S, rule: LimitRule, spend: SettleContext): StoredState<S> | null | undefined;
  /**
   * Adds `cost` units to the spend at `at` (above its `keep` units) where it was charged, without
   * a limit check: the new state, or `undefined` when the spend no longer weighs (nothing to add).
   */
  charge(state: S | undefined, rule: LimitRule, spend: SettleContext): StoredState<S> | undefined;
  /**
   * Gives `cost` units of room now (`Store.grant`), never beyond an empty state: the new state,
   * `null` to delete, or `undefined` when there is nothing to give. Absent for `concurrency`.
   */
  grant?(state: S, rule: LimitRule, spend: SpendContext): StoredState<S> | null | undefined;
}

/** The evaluation of a state from a window that starts at `seen`, later than now (see `seen`). */
export function later(seen: number): PairEvaluation<never> {
  return {
    fits: false,
    room: 0,
    waitMs: 0,
    resetMs: () => 0,
    next: () => {
      throw new Error('redlimit: a state from a later window is evaluated again, never spent');
    },
    seen,
  };
}
