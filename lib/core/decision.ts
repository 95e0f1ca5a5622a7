import type { Algorithm, FailMode, LimitRule } from './policy';

/**
 * Proof of one spend: what it took, from which keys, at which instant of the store's clock.
 * Hand it (or its {@link Decision}) to {@link Limiter.refund} to give exactly that spend back.
 * A receipt refunds at most once; the receipt of a refused or read-only decision refunds nothing.
 */
export interface Receipt {
  /** Name of the policy that charged the spend. */
  readonly policy: string;
  /** Algorithm of that policy when it charged. */
  readonly algorithm: Algorithm;
  /** The limits the spend was charged under (a refund goes back to these windows). */
  readonly limits: readonly LimitRule[];
  /** The distinct keys charged, in call order. */
  readonly keys: readonly string[];
  /** Units charged on every key; 0 when nothing was spent. */
  readonly cost: number;
  /** The store clock's reading (ms since the epoch) when the spend happened. */
  readonly at: number;
  /**
   * Identifies the spend: the store's refund ledger records it so the spend is refunded at most
   * once, even from a copy of this receipt; a sliding log also names its members after it. Set on
   * every spent receipt; keep it when you store receipts.
   */
  readonly spendId?: string;
  /** Per key, the store clock's reading, where keys were charged at different instants (Cluster). */
  readonly atByKey?: readonly number[];
  /**
   * Per key, the mark of the key's last reset when the spend was charged (absent when none of its
   * keys had ever been reset): a refund gives nothing back on a key reset since, even in the same
   * millisecond. Keep it when you store receipts.
   */
  readonly resetMarks?: readonly number[];
  /** Whether anything was spent; false for refused and read-only decisions. */
  readonly spent: boolean;
  /** Charged to the in-process fallback (`failMode: 'memory'`) while the store was failing. */
  readonly fallback?: boolean;
  /**
   * With the limiter option `receiptSecret`: an HMAC of every field above, checked before a
   * refund, adjustment, release or extension reaches the store, so a receipt that left the process
   * (stored as JSON, handed out as a reservation token) cannot be forged or moved to another key.
   * Keep it when you store receipts.
   */
  readonly mac?: string;
}

/** Why a decision was made without the store. */
export interface StoreFailure {
  /** `timeout`: no answer within `timeoutMs`; `error`: the store answered with, or threw, an error. */
  readonly reason: 'timeout' | 'error';
  /** What went wrong. */
  readonly error: Error;
  /** The fail mode that decided: `closed` refused, `open` allowed, `memory` asked the fallback. */
  readonly failMode: FailMode;
}

/** Which key and limit refused a call (the one that would stay refused longest). */
export interface BlockedBy {
  /** The caller's key, as given to `consume`. */
  readonly key: string;
  /** The limit that refused. */
  readonly limit: number;
  /** That limit's window, in ms. */
  readonly windowMs: number;
}

/**
 * The outcome of one {@link Limiter.consume} (or {@link Limiter.peek}).
 *
 * @example
 * const decision = await limiter.consume(['ip:203.0.113.7', 'email:5f4dcc3b']);
 * if (!decision.allowed) throw new TooManyRequests(decision.retryAfterMs);
 */
export interface Decision {
  /** Whether the call may proceed (and, for `consume`, was charged on every key). */
  readonly allowed: boolean;
  /** Units left under the binding limit (the tightest over all keys and limits) after this call. */
  readonly remaining: number;
  /** The binding limit's size. */
  readonly limit: number;
  /** The binding limit's window, in ms. */
  readonly windowMs: number;
  /**
   * 0 when allowed; otherwise the earliest wait (ms) after which the same call is allowed if nobody
   * else spends.
   */
  readonly retryAfterMs: number;
  /** Milliseconds until every key is back to its full budget (0 when nothing is held). */
  readonly resetAfterMs: number;
  /** For a refusal (or a shadow refusal), the key and limit that refused. */
  readonly blockedBy?: BlockedBy;
  /** Name of the policy that decided. */
  readonly policy: string;
  /**
   * Set when a lockout (policy option `block`) refused, this call's refusal included: when the
   * latest lockout holding the call back ends, in ms since the epoch on the store's clock.
   */
  readonly blockedUntil?: number;
  /**
   * Set when the store failed and the policy's fail mode decided instead: `allowed` is then false
   * for `closed` (the store failed, not the budget), true for `open` (not enforced), and the
   * in-process fallback's answer for `memory` (this process's share of the limit: with a
   * `RedisStore`, the shares of its fleet add up to the limit). A policy in shadow
   * mode refuses nothing: what `closed` would refuse is allowed, with `shadowRefused`.
   */
  readonly failure?: StoreFailure;
  /** What was spent; pass it (or the decision) to {@link Limiter.refund}. */
  readonly receipt: Receipt;
  /**
   * True when allowed past the policy's soft limit (`warnAt`): at least that fraction of the
   * binding limit is used after this call. Absent otherwise.
   */
  readonly warning?: true;
  /**
   * True when the policy is in shadow mode (`shadow: true`) and refused: the decision is allowed
   * (`retryAfterMs` 0), nothing was spent, and `blockedBy` / `blockedUntil` say what would have
   * refused, or `failure` that the store failed under fail mode `closed`. Absent otherwise.
   */
  readonly shadowRefused?: true;
  /**
   * True when the store answered from its refusal cache (`RedisStore({ refusalCache })`): the
   * same call was refused moments ago and its wait has not passed, so no round trip was made.
   */
  readonly cached?: true;
}

/**
 * The outcome of {@link Limiter.consumeAll} (or {@link Limiter.peekAll}): several policies decided
 * as one. Allowed only if every part allowed; a refusal spent nothing on any part.
 *
 * @example
 * const stacked = await Limiter.consumeAll([
 *   { limiter: perIp, keys: `ip:${ip}` },
 *   { limiter: plan, keys: `key:${apiKeyHash}` },
 *   { limiter: exports, keys: `key:${apiKeyHash}` },
 * ]);
 * if (!stacked.allowed) reply429(stacked.refusedBy!.policy, stacked.retryAfterMs);
 */
export interface StackedDecision {
  /** Whether every part allowed (and, for `consumeAll`, every part was charged). */
  readonly allowed: boolean;
  /**
   * One decision per part, in the order given. Each carries the stack's `allowed` and its own
   * receipt; a part that fitted although another refused has `retryAfterMs` 0 and no `blockedBy`.
   */
  readonly decisions: readonly Decision[];
  /** For a refusal, the part that refused: the longest wait (ties: the first part). */
  readonly refusedBy?: Decision;
  /** 0 when allowed, else the refusing part's `retryAfterMs`. */
  readonly retryAfterMs: number;
}

/**
 * A frozen decision that charged nothing (its receipt refunds nothing): the answer when the store
 * failed and the fail mode decided, or when the Nest layer let a call through uncharged. The
 * binding limit is the policy's first.
 *
 * @example
 * unchargedDecision({ name: 'login', algorithm: 'fixed-window', limits }, [], { allowed: true, remaining: 10, retryAfterMs: 0 });
 */
export function unchargedDecision(
  policy: {
    readonly name: string;
    readonly algorithm: Algorithm;
    readonly limits: readonly LimitRule[];
  },
  keys: readonly string[],
  outcome: {
    readonly allowed: boolean;
    readonly remaining: number;
    readonly retryAfterMs: number;
    readonly failure?: StoreFailure;
  },
): Decision {
  const rule = policy.limits[0]!;
  return Object.freeze({
    allowed: outcome.allowed,
    remaining: outcome.remaining,
    limit: rule.limit,
    windowMs: rule.windowMs,
    retryAfterMs: outcome.retryAfterMs,
    resetAfterMs: 0,
    policy: policy.name,
    ...(outcome.failure && { failure: outcome.failure }),
    receipt: Object.freeze({
      policy: policy.name,
      algorithm: policy.algorithm,
      limits: policy.limits,
      keys,
      cost: 0,
      at: 0,
      spent: false,
    }),
  });
}
