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

/** The in-process twin of an algorithm's Lua scripts: same arithmetic, same answers. */
export interface MemoryAlgorithm<S> {
  /** Whether a stored value is this algorithm's state (a value of another algorithm counts as empty). */
  owns(value: unknown): value is S;
  /** Evaluates one pair. */
  evaluate(state: S | undefined, rule: LimitRule, spend: SpendContext): PairEvaluation<S>;
  /**
   * Gives back what the spend at `at` took: the new state, `null` to delete, or `undefined` when
   * nothing is left to give back.
   */
  refund(
    state: S,
    rule: LimitRule,
    spend: SpendContext & { readonly at: number },
  ): StoredState<S> | null | undefined;
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
