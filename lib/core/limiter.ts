import type { Attempt } from './attempt';
import { Deadlines } from './deadlines';
import type { Decision, Receipt, StackedDecision } from './decision';
import { checkActualCost, type Keys } from './keys.util';
import { checkArgumentCount, checkOptions } from './options.util';
import { type FailMode, type PolicyOptions, type ResolvedPolicy, resolvePolicy } from './policy';
import {
  checkLimiterOptions,
  CONSUME_OPTIONS,
  type ConsumeOptions,
  type LimiterOptions,
  NO_OPTIONS,
  type WaitForOptions,
} from './limiter-options';
import { beginAttempt, waitForTurn } from './limiter-attempts';
import { LimiterReports } from './limiter-reports';
import { PolicyDecider } from './policy-decider';
import { checkReceipt } from './receipt-check.util';
import { adjustReceipt, extendReceipt, refundReceipt } from './receipt-settlement';
import {
  adjustAll,
  beginAll,
  decideAll,
  refundAll,
  releaseAll,
  type StackMember,
  waitForAll,
} from './stack';
import type { SpendRequest, Store } from './store';
import { asError } from './values.util';
import type { WaitOptions } from './wait';

export type { ConsumeOptions, LimiterOptions, WaitForOptions } from './limiter-options';

/** One part of a stacked decision ({@link Limiter.consumeAll}): a policy and its keys. */
export interface StackPart {
  /** The policy, as a limiter. Every part of one stack must use the same store. */
  readonly limiter: Limiter;
  /** Caller keys for this policy: a string or a non-empty array of strings. */
  readonly keys: Keys;
  /** Units to charge on every key of this part (default 1), as in {@link Limiter.consume}. */
  readonly cost?: number;
}

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
  /** The fail mode in force: the policy's, else the limiter's, else `'closed'`. */
  readonly failMode: FailMode;
  /** Longest wait for the store per call, in ms. */
  readonly timeoutMs: number;
  /** Reports store failures, shadow refusals and failed settlements (options or warnings). */
  private readonly reports: LimiterReports;
  /**
   * Bounds every call of this limiter by `timeoutMs`, with one timer (a stack's too).
   *
   * @internal
   */
  readonly deadlines: Deadlines;
  /**
   * The limiter's options, less `receiptSecret` (kept only inside {@link receipts}).
   *
   * @internal
   */
  readonly options: Omit<LimiterOptions, 'receiptSecret'>;
  /**
   * Decides this policy's calls on the store (fail modes, shadow mode, late replies); a stack
   * decides its parts through it too.
   *
   * @internal
   */
  readonly decider: PolicyDecider;

  /**
   * @throws TypeError / RangeError naming what is wrong with the policy
   */
  constructor(
    /** Where this limiter's budget lives. */
    readonly store: Store,
    policy: PolicyOptions,
    options: LimiterOptions = {},
  ) {
    if (!store || typeof store.consume !== 'function' || typeof store.refund !== 'function') {
      throw new TypeError('Limiter store must implement Store (consume, peek, refund, reset)');
    }
    this.policy = resolvePolicy(policy);
    const settings = checkLimiterOptions(store, this.policy, options);
    // The secret is kept where neither JSON.stringify nor util.inspect of the limiter shows it.
    this.options = settings.options;
    this.reports = new LimiterReports(this.policy.name, settings.options);
    this.failMode = settings.failMode;
    this.timeoutMs = settings.timeoutMs;
    this.deadlines = new Deadlines(this.timeoutMs);
    this.decider = new PolicyDecider(store, this.policy, settings, this.deadlines, this.reports);
  }

  /**
   * Checks every limit on every key and, if all allow, charges `cost` on every key. When the store
   * fails or is slower than `timeoutMs`, the fail mode decides (see {@link Decision.failure}); a
   * spend whose reply arrives after the timeout is refunded by its receipt.
   */
  consume(keys: Keys, options: ConsumeOptions = NO_OPTIONS): Promise<Decision> {
    // Not an async function: a refusal the store remembers costs no extra promise. Bad input
    // still rejects (it never throws synchronously).
    let request: SpendRequest;
    try {
      if (options !== NO_OPTIONS) checkOptions(options, CONSUME_OPTIONS, 'consume() options');
      request = this.decider.request(keys, options);
    } catch (error) {
      return Promise.reject(asError(error));
    }
    return this.decider.decide(request, true);
  }

  /** What {@link consume} with the same arguments would decide now; writes nothing. */
  async peek(keys: Keys, options: ConsumeOptions = NO_OPTIONS): Promise<Decision> {
    checkOptions(options, CONSUME_OPTIONS, 'peek() options');
    return this.decider.decide(this.decider.request(keys, options), false);
  }

  /**
   * Gives back exactly what one allowed spend took, to the windows it was taken from. At most once
   * per receipt; refunding a refused decision, or after the charged window has passed, does nothing.
   *
   * @returns whether a refund was sent to the store (false: nothing spent, or this receipt object
   *   already refunded in this process). A copy of the receipt (e.g. through JSON), or one refunded
   *   by another process, is sent and returns true; the store's ledger then gives nothing back.
   */
  async refund(target: Decision | Receipt): Promise<boolean> {
    checkArgumentCount(
      arguments.length,
      1,
      'refund() takes one argument (a Decision or its Receipt)',
    );
    return refundReceipt(this.receiptOf(target, 'refund'), this.decider);
  }

  /**
   * Settles one allowed spend to what it actually cost, once that is known (tokens used, rows
   * exported): the spend reserved `receipt.cost` units and now costs `actualCost` (a whole number
   * ≥ 0). Less: the difference goes back exactly as a refund would (to the window or bucket it was
   * charged in; nothing once that window is over; never creating budget). More: the extra is
   * charged where the spend was charged, without a limit check (the work already happened), so
   * the budget can go into debt, which later decisions wait out (`retryAfterMs` stays exact). At
   * most once per receipt, copies included (the store's ledger records it); nothing after a
   * refund; a refund after it gives back what the spend then costs.
   *
   * @returns whether the adjustment was sent to the store (false: nothing spent, already refunded
   *   or adjusted in this process)
   * @throws RangeError when `actualCost` is not a whole number ≥ 0 (or too large for the windows),
   *   TypeError for a bad receipt or a store without adjustments; before the store is touched
   */
  async adjust(target: Decision | Receipt, actualCost: number): Promise<boolean> {
    checkArgumentCount(
      arguments.length,
      2,
      'adjust() takes two arguments (a Decision or its Receipt, and the actual cost)',
    );
    const receipt = this.receiptOf(target, 'adjust');
    checkActualCost(actualCost, this.policy.limits);
    return adjustReceipt(receipt, actualCost, this.decider);
  }

  /**
   * Releases a `concurrency` lease at once (the same as {@link refund}): its slots are free for the
   * next caller. Releasing twice, or after the lease expired, does nothing.
   *
   * @returns whether the release was sent to the store
   */
  release(target: Decision | Receipt): Promise<boolean> {
    try {
      checkArgumentCount(
        arguments.length,
        1,
        'release() takes one argument (a Decision or its Receipt)',
      );
    } catch (error) {
      return Promise.reject(asError(error));
    }
    return this.refund(target);
  }

  /**
   * Renews a `concurrency` lease for another `window` from now, for long work (call it before the
   * lease runs out, e.g. every half window). A lease that expired or was released is not brought
   * back: take a new one.
   *
   * @returns true when the whole lease was still held and is renewed; false when nothing was spent,
   *   the lease was released, or (part of) it had expired
   * @throws TypeError when the policy is not `concurrency` or the store cannot extend leases
   */
  async extend(target: Decision | Receipt): Promise<boolean> {
    checkArgumentCount(
      arguments.length,
      1,
      'extend() takes one argument (a Decision or its Receipt)',
    );
    return extendReceipt(this.receiptOf(target, 'extend'), this.decider);
  }

  /** The receipt of a refund or adjustment, checked: this policy's, as it was returned. */
  private receiptOf(
    target: Decision | Receipt,
    operation: 'refund' | 'adjust' | 'extend',
  ): Receipt {
    return checkReceipt(target, operation, this.policy, this.decider.receipts);
  }

  /**
   * Several policies as one decision: checks every limit of every part on its keys and, only if
   * all allow, charges every part (one script run on Redis; slot groups with compensation on
   * Cluster). A refusal spends nothing anywhere and names the part that refused. Every limiter
   * must use the same store; the same policy and key may not appear in two parts. The wait for
   * the store is the shortest `timeoutMs` of the limiters; when the store fails, each part
   * follows its own fail mode and the stack is allowed only if every part then is.
   *
   * @throws TypeError / RangeError naming the bad part, before the store is touched
   */
  static async consumeAll(parts: readonly StackPart[]): Promise<StackedDecision> {
    return decideAll(parts, true, 'consumeAll', isLimiter);
  }

  /**
   * {@link Limiter.consumeAll}, waiting for a turn: after a refusal, sleeps until its
   * `retryAfterMs` (plus a little jitter) and tries again, until allowed.
   *
   * @throws RateLimitedError (the refusing part's decision) once the next try would come after
   *   `maxWaitMs`; StoreUnavailableError when the store fails and a part fails closed; the
   *   signal's reason when it aborts
   */
  static async waitForAll(
    parts: readonly StackPart[],
    options: WaitOptions,
  ): Promise<StackedDecision> {
    return waitForAll(parts, options, isLimiter);
  }

  /** What {@link Limiter.consumeAll} with the same parts would decide now; writes nothing. */
  static async peekAll(parts: readonly StackPart[]): Promise<StackedDecision> {
    return decideAll(parts, false, 'peekAll', isLimiter);
  }

  /**
   * Gives back every part of a stacked spend ({@link Limiter.consumeAll}), each by its receipt and
   * at most once, as {@link Limiter.refund} does. Parts are refunded independently: one that fails
   * keeps its cost (the safe side) and the error is thrown after the others were tried.
   *
   * @returns whether any refund was sent
   */
  static async refundAll(stacked: StackedDecision): Promise<boolean> {
    checkArgumentCount(arguments.length, 1, 'refundAll() takes one argument (a StackedDecision)');
    return refundAll(stacked);
  }

  /**
   * Releases the `concurrency` leases of a stacked spend ({@link Limiter.consumeAll}), leaving its
   * rate parts charged: "3 in flight and 100 per minute" gives back the slot, not the request.
   *
   * @returns whether any release was sent
   */
  static async releaseAll(stacked: StackedDecision): Promise<boolean> {
    checkArgumentCount(arguments.length, 1, 'releaseAll() takes one argument (a StackedDecision)');
    return releaseAll(stacked);
  }

  /**
   * Settles every part of a stacked spend ({@link Limiter.consumeAll}) to its actual cost, as
   * {@link Limiter.adjust} does: `actualCosts[i]` for part i. Parts are adjusted independently:
   * one that fails keeps what it was charged and the error is thrown after the others were tried.
   *
   * @returns whether any adjustment was sent
   * @throws TypeError / RangeError naming the bad argument, before the store is touched
   */
  static async adjustAll(
    stacked: StackedDecision,
    actualCosts: readonly number[],
  ): Promise<boolean> {
    checkArgumentCount(
      arguments.length,
      2,
      'adjustAll() takes two arguments (a StackedDecision, and one actual cost per part)',
    );
    return adjustAll(stacked, actualCosts);
  }

  /**
   * Consumes, waiting for a turn: after a refusal, sleeps until its `retryAfterMs` (plus a little
   * jitter, so waiting processes do not all come back at once) and tries again, until allowed.
   * Never spins: one store call per try. For outbound clients that must stay under a partner's
   * limit across instances. A policy with `block` waits out the lockout its first refusal starts.
   *
   * @returns an allowed decision
   * @throws RateLimitedError (the last refusal) once the next try would come after `maxWaitMs`
   * @throws StoreUnavailableError when the store fails and the policy fails closed
   * @throws the signal's reason when `signal` aborts (before a try or while sleeping)
   * @example
   * // A partner allows 10 requests per second across all our instances.
   * const partner = new Limiter(store, { name: 'partner', algorithm: 'gcra', limit: 10, window: '1s' });
   * await partner.waitFor('partner:acme', { maxWaitMs: 5_000, signal: AbortSignal.timeout(10_000) });
   * await fetch('https://api.partner.example/…');
   */
  async waitFor(keys: Keys, options: WaitForOptions): Promise<Decision> {
    return waitForTurn(this, keys, options);
  }

  /**
   * Spends, then hands an {@link Attempt} to the caller to settle explicitly.
   *
   * @throws RateLimitedError when refused (nothing is spent)
   * @throws StoreUnavailableError when the store failed and the policy fails closed
   */
  async begin(keys: Keys, options: ConsumeOptions = NO_OPTIONS): Promise<Attempt> {
    checkOptions(options, CONSUME_OPTIONS, 'begin() options');
    return beginAttempt(this, keys, options);
  }

  /**
   * Several policies as one decision ({@link Limiter.consumeAll}), handed to the caller as one
   * {@link Attempt} to settle explicitly: the stacked counterpart of {@link begin}. Its `decision`
   * is the first part's, and `attempt.stacked` the whole decision. Settling applies to every part:
   * `attempt.refund()` gives every part back once ({@link Limiter.refundAll}); `attempt.adjust(n)`
   * settles every rate part to `n` ({@link Limiter.adjustAll}); otherwise the rate parts keep
   * their cost. `concurrency` parts are always released when it settles (only they, without a
   * refund: {@link Limiter.releaseAll}), and `attempt.extend()` renews them.
   *
   * @throws TypeError / RangeError naming the bad part (as consumeAll), before the store is touched
   * @throws RateLimitedError carrying the refusing part's decision (nothing is spent)
   * @throws StoreUnavailableError when the store failed and the refusing part fails closed
   * @example
   * const attempt = await Limiter.beginAll([
   *   { limiter: perIp, keys: `ip:${ip}` },
   *   { limiter: perDevice, keys: `device:${deviceHash}` },
   * ]);
   * try {
   *   if (await passwordMatches()) attempt.refund();
   * } finally {
   *   await attempt.settle();
   * }
   */
  static async beginAll(parts: readonly StackPart[]): Promise<Attempt> {
    checkArgumentCount(
      arguments.length,
      1,
      'beginAll() takes one argument (the parts: an array of { limiter, keys, cost? }); it has no options',
    );
    return beginAll(parts, isLimiter);
  }

  /**
   * Spends, runs `fn`, then settles: the spend is refunded if `fn` called `attempt.refund()`
   * (even if `fn` then threw), and kept otherwise.
   *
   * @throws RateLimitedError when refused; `fn` never runs
   * @throws StoreUnavailableError when the store failed and the policy fails closed; `fn` never runs
   */
  async attempt<T>(
    keys: Keys,
    fn: (attempt: Attempt) => T | Promise<T>,
    options: ConsumeOptions = NO_OPTIONS,
  ): Promise<T> {
    if (typeof fn !== 'function') throw new TypeError('attempt() needs a function to run');
    checkOptions(options, CONSUME_OPTIONS, 'attempt() options');
    const attempt = await this.begin(keys, options);
    try {
      return await fn(attempt);
    } finally {
      await attempt
        .settle()
        .catch((error: unknown) => this.reports.settleError(error, attempt.decision));
    }
  }

  /** Removes this policy's state for the keys (e.g. an admin unlocking one account). */
  async reset(keys: Keys): Promise<void> {
    checkArgumentCount(arguments.length, 1, 'reset() takes one argument (the keys)');
    return this.decider.reset(keys);
  }

  /**
   * Gives the keys `units` of room now under every limit of this policy: a one-off allowance (a
   * customer let through again after support checked them, the rest of a quota topped up). Never
   * beyond an empty state: a counter stops at zero, a token bucket at full, a sliding log loses its
   * newest entries; a sliding window takes from the current window's count first, then enough of
   * the previous one's, as weighted now. A lockout stays (lift it with {@link reset}). Receipts
   * of earlier spends still refund at most what they took. Reported as a decision event
   * (operation `grant`).
   *
   * @example
   * await login.grant(`email:${hash}`, 3); // three more attempts now
   * @throws RangeError for `units` that is not a whole number ≥ 1 (or too large for the policy's
   *   windows); TypeError for bad keys, a `concurrency` policy (release a lease instead) or a store
   *   without `grant`; all before the store is touched
   */
  async grant(keys: Keys, units: number): Promise<void> {
    checkArgumentCount(
      arguments.length,
      2,
      'grant() takes two arguments (the keys, and the units)',
    );
    return this.decider.grant(keys, units);
  }
}

/** Whether a stack part's `limiter` is a {@link Limiter} (what a stack needs of it). */
function isLimiter(value: unknown): value is StackMember {
  return value instanceof Limiter;
}
