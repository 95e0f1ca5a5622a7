/** The rate algorithms: each admits `limit` units per `window`. */
export type RateAlgorithm =
  'fixed-window' | 'sliding-window' | 'token-bucket' | 'gcra' | 'sliding-log';

/**
 * The algorithms a policy can use: a rate algorithm, or `concurrency` (at most `limit` leases in
 * flight per key, each released by a refund or expiring after `window`).
 */
export type Algorithm = RateAlgorithm | 'concurrency';

/** One validated limit: `limit` units per `windowMs` milliseconds. */
export interface LimitRule {
  /** Units allowed per window. */
  readonly limit: number;
  /** Window length in ms. */
  readonly windowMs: number;
  /** Bucket capacity (`token-bucket`, `gcra`); equal to `limit` for the other algorithms. */
  readonly burst: number;
}

/** A policy's resolved limits, as an algorithm's own checks see them. */
export interface AlgorithmLimits {
  /** The policy's name (for messages). */
  readonly policy: string;
  /** Its limits, in the order given. */
  readonly limits: readonly LimitRule[];
  /** Where each limit was written (`policy`, `policy.limits[1]`), for messages naming the field. */
  readonly paths: readonly string[];
}

/**
 * Everything the TypeScript side knows about one algorithm besides its Lua scripts
 * (`lua/<name>/`) and its in-memory twin (`lib/stores/memory/`): how its policies are checked, how
 * long its state lives, and how its calls are packed for the scripts. One module per algorithm
 * (`<name>.algorithm.ts`), listed in `algorithm.registry.ts`.
 *
 * @example
 * const fixedWindow: AlgorithmDefinition<'fixed-window'> = {
 *   name: 'fixed-window',
 *   kind: 'rate',
 *   usesBurst: false,
 *   keepsSpendIds: false,
 *   lifetimeMs: ({ windowMs }) => windowMs,
 * };
 */
export interface AlgorithmDefinition<A extends Algorithm = Algorithm> {
  /** The name policies give (`algorithm: 'gcra'`), its Lua folder (`lua/gcra/`). */
  readonly name: A;
  /**
   * `rate`: `limit` units per `window` (listed in `ALGORITHMS`); `lease`: `limit` units in flight,
   * each released by a refund or expiring after `window` (the lease paths of the limiter, the
   * stores and `lua/<name>/extend.lua` apply).
   */
  readonly kind: 'rate' | 'lease';
  /** Whether a limit may set `burst` (its capacity); otherwise `burst` is refused and equals `limit`. */
  readonly usesBurst: boolean;
  /**
   * Whether the state keeps one entry per spend, named after the spend's id: every decision then
   * carries a spend id to the scripts (batch/consume.lua reads it from the `ids` flag of
   * lib/models.lua, which is generated from this).
   */
  readonly keepsSpendIds: boolean;
  /**
   * How long a spend under `rule` can still weigh on the state (a state key's longest life); the
   * policy's state lifetime is the longest over its limits.
   */
  readonly lifetimeMs: (rule: LimitRule) => number;
  /**
   * Checks of its own on a policy's resolved limits (after the common ones): throws a
   * TypeError / RangeError naming the field.
   */
  checkLimits?(limits: AlgorithmLimits): void;
  /** Throws when a policy of this algorithm must not set `block` (named by `policy`). */
  checkBlock?(policy: string): void;
}
