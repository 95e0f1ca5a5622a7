import type { Store, SpendRequest, SpendResult } from '../stores/store.interface';
import { Attempt } from './attempt';
import type { Decision, Receipt } from './decision';
import { RateLimitedError } from './errors';
import { type Keys, normalizeCost, normalizeKeys } from './keys.util';
import { type PolicyOptions, type ResolvedPolicy, resolvePolicy } from './policy';

/** Per-call options of {@link Limiter.consume} and friends. */
export interface ConsumeOptions {
  /** Units to charge on every key: a whole number from 1 to the policy's smallest limit. Default 1. */
  readonly cost?: number;
}

/** Options of {@link Limiter}. */
export interface LimiterOptions {
  /**
   * Called when {@link Limiter.attempt} cannot apply a refund after its body finished (the cost is
   * then kept, which only errs on the safe side). Default: a process warning.
   */
  readonly onSettleError?: (error: unknown, decision: Decision) => void;
}

/** Receipts already refunded (or being refunded) in this process: a receipt refunds once. */
const settledReceipts = new WeakSet<Receipt>();

/**
 * Applies one policy to caller keys on a store. Every call is one atomic store operation over all
 * keys and limits: it spends on every key or on none.
 *
 * @example
 * const limiter = new Limiter(new RedisStore({ client }), {
 *   name: 'login',
 *   algorithm: 'fixed-window',
 *   limit: 10,
 *   window: '15m',
 * });
 * const user = await limiter.attempt([`ip:${ip}`, `email:${emailHash}`], async (attempt) => {
 *   const user = await users.verify(email, password); // throws on a wrong password: the cost stays
 *   attempt.refund(); // the owner signed in: it was free
 *   return user;
 * });
 */
export class Limiter {
  /** The validated policy. */
  readonly policy: ResolvedPolicy;
  private readonly smallestLimit: number;

  /**
   * @throws TypeError / RangeError naming what is wrong with the policy
   */
  constructor(
    private readonly store: Store,
    policy: PolicyOptions,
    private readonly options: LimiterOptions = {},
  ) {
    if (!store || typeof store.consume !== 'function' || typeof store.refund !== 'function') {
      throw new TypeError('Limiter store must implement Store (consume, peek, refund, reset)');
    }
    this.policy = resolvePolicy(policy);
    this.smallestLimit = Math.min(...this.policy.limits.map((rule) => rule.limit));
  }

  /** Checks every limit on every key and, if all allow, charges `cost` on every key. */
  async consume(keys: Keys, options: ConsumeOptions = {}): Promise<Decision> {
    const request = this.request(keys, options);
    return this.toDecision(request, await this.store.consume(request), true);
  }

  /** What {@link consume} with the same arguments would decide now; writes nothing. */
  async peek(keys: Keys, options: ConsumeOptions = {}): Promise<Decision> {
    const request = this.request(keys, options);
    return this.toDecision(request, await this.store.peek(request), false);
  }

  /**
   * Gives back exactly what one allowed spend took, to the windows it was taken from. At most once
   * per receipt; refunding a refused decision, or after the charged window has passed, does nothing.
   *
   * @returns whether a refund was sent to the store (false: nothing spent, or already refunded)
   */
  async refund(target: Decision | Receipt): Promise<boolean> {
    const receipt = isDecision(target) ? target.receipt : target;
    if (!receipt || typeof receipt !== 'object' || !Array.isArray(receipt.keys)) {
      throw new TypeError('refund() takes a Decision or its Receipt');
    }
    if (receipt.policy !== this.policy.name) {
      throw new RangeError(
        `refund(): the receipt belongs to policy '${receipt.policy}', not '${this.policy.name}'`,
      );
    }
    if (!receipt.spent || settledReceipts.has(receipt)) return false;
    settledReceipts.add(receipt);
    try {
      await this.store.refund({
        policy: receipt.policy,
        algorithm: receipt.algorithm,
        limits: receipt.limits,
        keys: receipt.keys,
        cost: receipt.cost,
        at: receipt.at,
      });
    } catch (error) {
      settledReceipts.delete(receipt); // not applied: may be tried again
      throw error;
    }
    return true;
  }

  /**
   * Spends, then hands an {@link Attempt} to the caller to settle explicitly.
   *
   * @throws RateLimitedError when refused (nothing is spent)
   */
  async begin(keys: Keys, options: ConsumeOptions = {}): Promise<Attempt> {
    const decision = await this.consume(keys, options);
    if (!decision.allowed) throw new RateLimitedError(decision);
    return new Attempt(decision, (spent) => this.refund(spent));
  }

  /**
   * Spends, runs `fn`, then settles: the spend is refunded if `fn` called `attempt.refund()`
   * (even if `fn` then threw), and kept otherwise.
   *
   * @throws RateLimitedError when refused; `fn` never runs
   */
  async attempt<T>(
    keys: Keys,
    fn: (attempt: Attempt) => T | Promise<T>,
    options: ConsumeOptions = {},
  ): Promise<T> {
    if (typeof fn !== 'function') throw new TypeError('attempt() needs a function to run');
    const attempt = await this.begin(keys, options);
    try {
      return await fn(attempt);
    } finally {
      await attempt
        .settle()
        .catch((error: unknown) => this.reportSettleError(error, attempt.decision));
    }
  }

  /** Removes this policy's state for the keys (e.g. an admin unlocking one account). */
  async reset(keys: Keys): Promise<void> {
    await this.store.reset({
      policy: this.policy.name,
      limits: this.policy.limits,
      keys: normalizeKeys(keys),
    });
  }

  private request(keys: Keys, options: ConsumeOptions): SpendRequest {
    return {
      policy: this.policy.name,
      algorithm: this.policy.algorithm,
      limits: this.policy.limits,
      keys: normalizeKeys(keys),
      cost: normalizeCost(options?.cost, this.smallestLimit),
    };
  }

  private toDecision(request: SpendRequest, result: SpendResult, spend: boolean): Decision {
    const rule = request.limits[result.limitIndex] ?? request.limits[0]!;
    const spent = spend && result.allowed;
    const receipt: Receipt = Object.freeze({
      policy: request.policy,
      algorithm: request.algorithm,
      limits: request.limits,
      keys: request.keys,
      cost: spent ? request.cost : 0,
      at: result.at,
      spent,
    });
    const blockedKey = request.keys[result.blockedKeyIndex];
    return Object.freeze({
      allowed: result.allowed,
      remaining: Math.max(0, result.remaining),
      limit: rule.limit,
      windowMs: rule.windowMs,
      retryAfterMs: result.retryAfterMs,
      resetAfterMs: result.resetAfterMs,
      ...(blockedKey !== undefined && {
        blockedBy: Object.freeze({ key: blockedKey, limit: rule.limit, windowMs: rule.windowMs }),
      }),
      policy: request.policy,
      receipt,
    });
  }

  private reportSettleError(error: unknown, decision: Decision): void {
    if (this.options.onSettleError) {
      this.options.onSettleError(error, decision);
      return;
    }
    const reason = error instanceof Error ? error.message : String(error);
    process.emitWarning(
      `redlimit: could not refund a spend of policy '${decision.policy}' (the cost was kept): ${reason}`,
      'RedlimitWarning',
    );
  }
}

function isDecision(target: Decision | Receipt): target is Decision {
  return typeof target === 'object' && target !== null && 'receipt' in target;
}
