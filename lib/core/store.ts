import type { OverrideBook } from './overrides';
import type { Algorithm, BlockRule, LimitRule } from './policy';

/** What a {@link Store} is asked to check (and, for `consume`, spend) in one atomic step. */
export interface SpendRequest {
  /** Policy name; part of every stored key, so policies never share state. */
  readonly policy: string;
  /** Counting algorithm. */
  readonly algorithm: Algorithm;
  /** Every limit is checked on every key. */
  readonly limits: readonly LimitRule[];
  /** Distinct, validated caller keys. */
  readonly keys: readonly string[];
  /** Units to charge on every key (≥ 1). */
  readonly cost: number;
  /**
   * When the caller stops waiting, on this process's monotonic clock (`monotonicNow`). A
   * store that can be reached late (Redis) must not apply a spend that arrives after it.
   */
  readonly deadlineAt?: number;
  /**
   * The policy's lockout: a key it locked out refuses until the lockout ends, and a consume
   * refused for lack of budget locks each key that refused out (see {@link BlockRule}).
   */
  readonly block?: BlockRule;
  /**
   * The spend will be settled by its receipt (`Limiter.begin`, `Limiter.attempt`): a store with a
   * bounded refund ledger registers it as it is made, so that its first refund or adjustment is
   * honoured however many other refunds the ledger has forgotten since. Ignored by a peek, and
   * by a `concurrency` policy (a lease is released, not refunded through the ledger).
   */
  readonly settles?: boolean;
}

/** A store's answer to a {@link SpendRequest}. */
export interface SpendResult {
  /** True when every limit allowed on every key (and, for `consume`, all were charged). */
  readonly allowed: boolean;
  /** Units left under the binding limit. */
  readonly remaining: number;
  /** Index into `limits` of the binding limit: least remaining, or the refusing one when refused. */
  readonly limitIndex: number;
  /** 0 when allowed, else the earliest wait after which the same request is allowed. */
  readonly retryAfterMs: number;
  /** Time until every key is back to full budget. */
  readonly resetAfterMs: number;
  /** Index into `keys` of the key that refused (the longest wait), or -1. */
  readonly blockedKeyIndex: number;
  /** The store clock's reading when the request was decided, in ms. */
  readonly at: number;
  /** Id of the spend's own stored entries, for algorithms that keep them (`sliding-log`). */
  readonly spendId?: string;
  /** Per key, when keys were decided at different instants (Redis Cluster slot groups). */
  readonly atByKey?: readonly number[];
  /**
   * For a spend, per key, the mark of the key's last reset when it was charged; absent when no key
   * had ever been reset. A refund gives nothing back on a key reset since.
   */
  readonly resetMarks?: readonly number[];
  /**
   * Set when a lockout refused: the latest end (store clock, ms since the epoch) of the lockouts
   * that hold the call back, including one this refusal started.
   */
  readonly blockedUntil?: number;
  /** Set when the answer is a refusal the store remembered, given without asking its backend. */
  readonly cached?: true;
}

/**
 * A store's answer to several requests decided as one ({@link Store.consumeStack}): every limit of
 * every request was checked before anything was written, and either all were charged or none.
 */
export interface StackResult {
  /** True when every limit of every request allowed (and, for `consumeStack`, all were charged). */
  readonly allowed: boolean;
  /** Index of the request that refused (the longest wait; ties to the first), or -1. */
  readonly refusingIndex: number;
  /**
   * One answer per request, in order. `allowed` is the stack's; a request that fitted although
   * another refused has `retryAfterMs` 0, `blockedKeyIndex` -1 and `remaining` as before the call.
   */
  readonly results: readonly SpendResult[];
}

/** Returns what one earlier spend took, to the windows it was taken from. */
export interface RefundRequest extends SpendRequest {
  /** `at` of the spend being refunded. */
  readonly at: number;
  /** `spendId` of the spend being refunded, where the algorithm has one. */
  readonly spendId?: string;
  /** `atByKey` of the spend being refunded, where keys were decided at different instants. */
  readonly atByKey?: readonly number[];
  /** `resetMarks` of the spend being refunded (absent: all 0). */
  readonly resetMarks?: readonly number[];
}

/**
 * Makes one earlier spend cost `actualCost` instead of what it was charged: less gives the
 * difference back as a refund would; more charges the extra where the spend was charged, without
 * a limit check. At most once per spend (the store's ledger records it).
 */
export interface AdjustRequest extends RefundRequest {
  /** What the spend costs now (a whole number ≥ 0); `cost` stays what it was charged. */
  readonly actualCost: number;
}

/**
 * The refund of one spend, from the request that made it and the store's answer.
 *
 * @example
 * await store.refund(refundOf(request, await store.consume(request)));
 */
export function refundOf(request: SpendRequest, spent: SpendResult): RefundRequest {
  return {
    ...request,
    at: spent.at,
    spendId: spent.spendId,
    atByKey: spent.atByKey,
    resetMarks: spent.resetMarks,
  };
}

/** Removes all state a policy holds for some keys, lockouts included. */
export interface ResetRequest {
  /** Policy name. */
  readonly policy: string;
  /** The policy's algorithm (how long its state can matter). */
  readonly algorithm: Algorithm;
  /** How many limits the policy has (one stored key each per caller key). */
  readonly limits: readonly LimitRule[];
  /** Caller keys to clear. */
  readonly keys: readonly string[];
}

/**
 * A one-off allowance (`Limiter.grant`): `units` of room given back now on every limit of the
 * policy, for each caller key, never beyond an empty state.
 */
export interface GrantRequest extends ResetRequest {
  /** Units of room to give (a whole number ≥ 1). */
  readonly units: number;
  /**
   * When the caller stops waiting (`monotonicNow`): a store that can be reached late (Redis) must
   * not apply a grant that arrives after it, so a grant the caller was told timed out and tries
   * again is not given twice.
   */
  readonly deadlineAt?: number;
}

/** A device epoch as read, with the store's clock at the reading (see `Store.readEpoch`). */
export interface EpochReading {
  /** The epoch: 0 when none is stored. */
  readonly epoch: number;
  /** The store's clock when it was read, in ms since 1970 (Redis `TIME`, or the store's clock). */
  readonly now: number;
}

/**
 * Where budget lives. Every method is atomic across all keys and limits of its request.
 * Implemented by {@link RedisStore} (shared by every process) and {@link MemoryStore}
 * (one process).
 */
export interface Store {
  /** Checks every limit on every key and, only if all allow, charges all of them. */
  consume(request: SpendRequest): Promise<SpendResult>;
  /** What `consume` would answer now; writes nothing. */
  peek(request: SpendRequest): Promise<SpendResult>;
  /**
   * A refusal this store remembers for exactly this consume (see `RedisStore`'s `refusalCache`),
   * answered without waiting, or undefined: then ask {@link consume}. Optional; a limiter calls it
   * first when it is there, so a remembered refusal costs no promise and no deadline.
   */
  rememberedRefusal?(request: SpendRequest): SpendResult | undefined;
  /**
   * Checks every limit of every request on its keys and, only if all allow, charges all of them:
   * several policies as one decision. No stored key may appear in two requests (the same policy
   * and caller key twice); the caller checks that. Optional for stores written before stacks:
   * without it (or without `peekStack`), `consumeAll` spends the parts one by one and gives back
   * those already charged when one refuses — all or nothing in the end, but not atomic: a
   * concurrent caller can see the tentative charges.
   */
  consumeStack?(requests: readonly SpendRequest[]): Promise<StackResult>;
  /** What `consumeStack` would answer now; writes nothing. */
  peekStack?(requests: readonly SpendRequest[]): Promise<StackResult>;
  /**
   * Gives back exactly what the spend at `request.at` took (what it costs after an adjustment);
   * never creates budget or keys.
   */
  refund(request: RefundRequest): Promise<void>;
  /**
   * Makes the spend at `request.at` cost `request.actualCost` (see {@link AdjustRequest}); once per
   * spend, nothing after its refund. Optional for stores written before adjustments: without it,
   * `Limiter.adjust` rejects with a clear error.
   */
  adjust?(request: AdjustRequest): Promise<void>;
  /**
   * Renews a `concurrency` lease for another `window` from now, on every key; a lease that expired
   * or was released is not brought back. Resolves true when the whole lease was still held.
   * Optional: without it, `Limiter.extend` rejects with a clear error.
   */
  extend?(request: RefundRequest): Promise<boolean>;
  /** Deletes the policy's state for the keys. */
  reset(request: ResetRequest): Promise<void>;
  /**
   * Gives `request.units` of room now on every limit of the policy for each caller key, never
   * beyond an empty state (a counter stops at zero, a bucket at full, a sliding log loses its
   * newest entries); lockouts stay. Names no spend: receipts refunded after it give back at most
   * what they would have. Not for `concurrency` (release a lease instead). Optional: without it,
   * `Limiter.grant` rejects with a clear error.
   */
  grant?(request: GrantRequest): Promise<void>;
  /**
   * Where live policy overrides are kept (see `PolicyOverrides`): shared by every process on
   * Redis, this process's on a MemoryStore. Optional: without it, a store has no live limits.
   */
  overrides?(): OverrideBook;
  /**
   * The device epoch (per-login revocation counter of trusted devices) stored under `key`, or 0
   * when there is none, with the store's clock at the reading (device tokens expire on it). A present epoch is kept at least `keepMs` from now (its expiry is extended,
   * never shortened), so it outlives every device token issued while it is in use. One round trip
   * on Redis; stored apart from every limiter state (`<prefix>epoch:{<key>}`). Rejects when the
   * store fails: the caller then treats the device as not trusted. Optional: stores without it
   * cannot trust devices.
   *
   * @param key the login's key, as a limiter key (a non-empty, well-formed string)
   * @param keepMs a whole number of ms from 1 to 366 days (the device tokens' lifetime)
   * @throws TypeError / RangeError naming the bad argument, before the store is touched
   */
  readEpoch?(key: string, keepMs: number): Promise<EpochReading>;
  /**
   * Moves the device epoch stored under `key` on by one, atomically (creating it at 1), keeps it
   * at least `keepMs` from now (never shortened) and resolves with the new epoch: every device
   * token issued under an earlier epoch is no longer trusted. Concurrent bumps each get their own
   * epoch. Optional, with {@link readEpoch}.
   *
   * @throws TypeError / RangeError naming the bad argument, before the store is touched
   */
  bumpEpoch?(key: string, keepMs: number): Promise<number>;
  /**
   * A store in this process that limits while this one fails, for policies with
   * `failMode: 'memory'` (RedisStore and MemoryStore give a new MemoryStore). Optional: a limiter
   * with that fail mode refuses a store without it when it is built.
   */
  fallback?(): Store;
}

/**
 * The error of a grant asked of a `concurrency` policy: leases are freed by their receipts.
 *
 * @internal
 */
export function grantOfLeases(policy: string): TypeError {
  return new TypeError(
    `grant(): policy '${policy}' leases (concurrency): free a lease by its receipt (release), it has no room to grant`,
  );
}
