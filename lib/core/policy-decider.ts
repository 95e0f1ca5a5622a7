import { isCallerError } from './caller-error.util';
import { monotonicNow } from './clock.util';
import type { BoundHandler, Deadlines } from './deadlines';
import { decisionOf } from './decision-of.util';
import { type Decision, type Receipt, type StoreFailure, unchargedDecision } from './decision';
import { StoreTimeoutError } from './errors';
import { type DecisionEvents, decisionEvent, grantEvent, resetEvent } from './events';
import { checkActualCost, type Keys, normalizeCost, normalizeKeys } from './keys.util';
import type { ConsumeOptions, LimiterSettings } from './limiter-options';
import type { LimiterReports } from './limiter-reports';
import type { FailMode, LimitRule, ResolvedPolicy } from './policy';
import type { PolicyOverrides } from './policy-overrides';
import { type ReceiptSigner, receiptSigner } from './receipt-mac.util';
import type { SettlingLimiter } from './receipt-settlement';
import { grantOfLeases, refundOf, type SpendRequest, type SpendResult, type Store } from './store';
import { asError } from './values.util';

/**
 * How one policy's calls are decided on its store, for a `Limiter` and for the stacks it is part
 * of: the store request of a call, the store call bounded by the deadline (a spend that answers
 * late is refunded), the fail mode when the store fails (open, closed, or the memory fallback),
 * shadow mode, and the decision events. Internal to the package.
 */
export class PolicyDecider implements SettlingLimiter {
  /** Where `failMode: 'memory'` keeps counting while the store fails (created on first need). */
  private fallbackStore?: Store;
  /** Signs and checks receipts (option `receiptSecret`), or undefined without a secret. */
  readonly receipts: ReceiptSigner | undefined;
  private readonly failMode: FailMode;
  private readonly timeoutMs: number;
  private readonly failureRetryAfterMs: number;
  /** The limiter's options, less `receiptSecret`: `events` is read on every call. */
  private readonly options: { readonly events?: DecisionEvents };
  /** Live limits, if the limiter has them. */
  private readonly overrides: PolicyOverrides | undefined;

  constructor(
    /** Where the policy's budget lives. */
    readonly store: Store,
    /** The validated policy. */
    readonly policy: ResolvedPolicy,
    /** The limiter's checked options (read here, not kept: they hold the receipt secret). */
    settings: LimiterSettings,
    /** Bounds every call by `timeoutMs`. */
    readonly deadlines: Deadlines,
    /** Where store failures and shadow refusals are reported. */
    private readonly reports: LimiterReports,
  ) {
    this.failMode = settings.failMode;
    this.timeoutMs = settings.timeoutMs;
    this.failureRetryAfterMs = settings.failureRetryAfterMs;
    this.options = settings.options;
    this.overrides = settings.options.overrides;
    // Made now, not on the first failure: a store's fallback may need to prepare while the store
    // is healthy (RedisStore's announces this process in its fleet).
    if (this.failMode === 'memory') this.fallbackStore = store.fallback!();
    const { prefix } = store as { readonly prefix?: unknown };
    this.receipts =
      settings.receiptSecret === undefined
        ? undefined
        : receiptSigner(settings.receiptSecret, typeof prefix === 'string' ? prefix : '');
  }

  /** The decision events (the limiter's option `events`), if any. */
  get events(): DecisionEvents | undefined {
    return this.options.events;
  }

  /** The store that spent a receipt: the memory fallback's (if it was ever created), or the store. */
  storeOf(receipt: Receipt): Store | undefined {
    return receipt.fallback ? this.fallbackStore : this.store;
  }

  /** One call on the store: a spend (`spend`) or a peek, reported to the decision events. */
  decide(request: SpendRequest, spend: boolean): Promise<Decision> {
    const events = this.options.events;
    if (!events?.active) return this.decideOnce(request, spend);
    return this.decideTimed(request, spend, events);
  }

  private async decideTimed(
    request: SpendRequest,
    spend: boolean,
    events: DecisionEvents,
  ): Promise<Decision> {
    const started = monotonicNow();
    const decision = await this.decideOnce(request, spend);
    const version = this.versionOf(request.limits);
    events.emit(
      decisionEvent(
        spend ? 'consume' : 'peek',
        decision,
        monotonicNow() - started,
        false,
        false,
        version,
      ),
    );
    return decision;
  }

  /** A remembered refusal at once (no deadline, no store call), else {@link decideOnStore}. */
  private decideOnce(request: SpendRequest, spend: boolean): Promise<Decision> {
    try {
      if (request.limits !== this.policy.limits && request.cost > maxCostOf(request.limits)) {
        return Promise.resolve(this.aboveOverride(request, spend));
      }
      const remembered = spend ? this.store.rememberedRefusal?.(request) : undefined;
      if (remembered === undefined) return this.decideOnStore(request, spend);
      const decision = this.toDecision(request, remembered, spend);
      return Promise.resolve(
        this.watched(this.shadowRefuses(decision) ? this.shadowed(decision) : decision),
      );
    } catch (error) {
      return Promise.reject(asError(error));
    }
  }

  private decideOnStore(request: SpendRequest, spend: boolean): Promise<Decision> {
    const pending = spend ? this.store.consume(request) : this.store.peek(request);
    // The request's deadline: `timeoutMs` after the call began (request() is never kept).
    return this.deadlines.bound(pending, this.onStore, request, spend, request.deadlineAt);
  }

  /** How a store call's outcome becomes the decision (see {@link Deadlines.bound}). */
  private readonly onStore: BoundHandler<SpendResult, Decision, SpendRequest> = {
    value: (request, spend, result) => {
      const decision = this.toDecision(request, result, spend);
      const final = this.shadowRefuses(decision) ? this.shadowed(decision) : decision;
      return spend ? this.watched(final) : final;
    },
    error: (request, spend, error) => {
      if (isCallerError(error)) throw error; // a broken clock is no store failure: no fail mode
      return this.failed(request, spend, error).then((failed) => {
        const final = this.shadowRefuses(failed) ? this.shadowed(failed) : failed;
        return spend ? this.watched(final) : final;
      });
    },
    // The caller was already answered without this spend: give it back.
    late: (request, spend, late) => {
      if (spend && late.allowed) this.refundLate(request, late);
    },
  };

  /** A consume's decision, shown to the events' watcher (the ops board's recorder) if any. */
  private watched(decision: Decision): Decision {
    this.options.events?.watcher?.(decision);
    return decision;
  }

  /**
   * A call whose cost is above what a live override allows (a limit lowered below it): refused,
   * spending nothing, as the store would refuse a cost that can never fit, without asking it.
   */
  private aboveOverride(request: SpendRequest, spend: boolean): Decision {
    const rule = request.limits.reduce((a, b) => (b.burst < a.burst ? b : a));
    const refused = unchargedDecision(
      { name: request.policy, algorithm: request.algorithm, limits: request.limits },
      request.keys,
      { allowed: false, remaining: 0, retryAfterMs: rule.windowMs },
    );
    const decision = Object.freeze({
      ...refused,
      limit: rule.limit,
      windowMs: rule.windowMs,
      blockedBy: Object.freeze({
        key: request.keys[0]!,
        limit: rule.limit,
        windowMs: rule.windowMs,
      }),
    });
    const final = this.shadowRefuses(decision) ? this.shadowed(decision) : decision;
    return spend ? this.watched(final) : final;
  }

  /** Gives back a spend whose reply came after the caller was answered without it. */
  refundLate(request: SpendRequest, late: SpendResult): void {
    const report = (error: unknown) =>
      this.reports.storeFailure({
        reason: 'error',
        error: asError(error),
        failMode: this.failMode,
      });
    try {
      // A store may throw at once (a custom clock that fails) rather than reject: reported alike.
      this.store.refund(refundOf(request, late)).catch(report);
    } catch (error) {
      report(error);
    }
  }

  /**
   * The policy a request's (or receipt's) limits came from: this limiter's, or the one a live
   * override made (see {@link PolicyOverrides}).
   */
  policyOf(limits: readonly LimitRule[]): ResolvedPolicy {
    if (limits === this.policy.limits || this.overrides === undefined) return this.policy;
    return this.overrides.ofLimits(limits)?.policy ?? this.policy;
  }

  /** The override version a request's limits came from, or undefined for the policy itself. */
  versionOf(limits: readonly LimitRule[]): number | undefined {
    if (limits === this.policy.limits || this.overrides === undefined) return undefined;
    return this.overrides.ofLimits(limits)?.version;
  }

  /** The policy a call on `keys` runs under now (an override's, or this limiter's). */
  private policyFor(keys: readonly string[]): ResolvedPolicy {
    if (this.overrides === undefined) return this.policy;
    return this.overrides.effective(this.policy, keys)?.policy ?? this.policy;
  }

  /** The decision when the store failed: the fail mode decides (the memory fallback, open or closed). */
  async failed(request: SpendRequest, spend: boolean, error: unknown): Promise<Decision> {
    const failMode = this.failModeOf(request.limits);
    const failure: StoreFailure = Object.freeze({
      reason: error instanceof StoreTimeoutError ? 'timeout' : 'error',
      error: asError(error),
      failMode,
    });
    this.reports.storeFailure(failure);
    if (failMode === 'memory') {
      const fallback = (this.fallbackStore ??= this.store.fallback!());
      // (an override's 'memory' was checked against the store when it was set)
      const result = spend ? await fallback.consume(request) : await fallback.peek(request);
      return this.toDecision(request, result, spend, failure);
    }
    const allowed = failMode === 'open';
    return unchargedDecision(
      { name: request.policy, algorithm: request.algorithm, limits: request.limits },
      request.keys,
      {
        allowed,
        remaining: 0,
        retryAfterMs: allowed ? 0 : this.failureRetryAfterMs,
        failure,
      },
    );
  }

  /** Removes this policy's state for the keys (`Limiter.reset`). */
  async reset(keys: Keys): Promise<void> {
    const request = {
      policy: this.policy.name,
      algorithm: this.policy.algorithm,
      limits: this.policy.limits,
      keys: normalizeKeys(keys),
    };
    const started = monotonicNow();
    await this.deadlines.race(this.store.reset(request));
    const events = this.options.events;
    if (events?.active)
      events.emit(resetEvent(request.policy, request.keys, monotonicNow() - started));
  }

  /**
   * Gives `units` of room now to the keys on every limit (`Limiter.grant`); checked before the
   * store is touched.
   */
  async grant(keys: Keys, units: unknown): Promise<void> {
    if (this.policy.algorithm === 'concurrency') throw grantOfLeases(this.policy.name);
    if (typeof units !== 'number' || !Number.isSafeInteger(units) || units < 1) {
      throw new RangeError(
        `grant(): units must be a whole number of at least 1; got ${String(units)}`,
      );
    }
    const normalized = normalizeKeys(keys);
    // Room under the limits in force for these keys (an override's, if one applies).
    const { limits } = this.policyFor(normalized);
    checkActualCost(units, limits, 'grant(): units');
    const store = this.store;
    if (typeof store.grant !== 'function') {
      throw new TypeError(
        'grant(): this store cannot grant room (it has no grant method); reset the key instead',
      );
    }
    const request = {
      policy: this.policy.name,
      algorithm: this.policy.algorithm,
      limits,
      keys: normalized,
      units,
      deadlineAt: monotonicNow() + this.timeoutMs,
    };
    const started = monotonicNow();
    await this.deadlines.race(store.grant(request));
    const events = this.options.events;
    if (events?.active)
      events.emit(grantEvent(request.policy, request.keys, monotonicNow() - started));
  }

  /** The store request of a call on this policy (keys and cost normalised). */
  request(keys: Keys, options: ConsumeOptions): SpendRequest {
    const normalized = normalizeKeys(keys);
    const policy = this.policyFor(normalized);
    return {
      policy: policy.name,
      algorithm: policy.algorithm,
      limits: policy.limits,
      keys: normalized,
      // Checked against the policy as configured: a cost only a live override's lower limit
      // cannot fit is refused when decided, never an error (see aboveOverride).
      cost: normalizeCost(options?.cost, this.policy.maxCost),
      deadlineAt: monotonicNow() + this.timeoutMs,
      block: policy.block, // undefined for most policies (a spread would cost more)
    };
  }

  /** The fail mode of a request's limits: an override's, else this limiter's. */
  private failModeOf(limits: readonly LimitRule[]): FailMode {
    if (limits === this.policy.limits) return this.failMode;
    const mode = this.policyOf(limits).failMode ?? this.failMode;
    // 'memory' needs the store's fallback: without one, closed.
    return mode === 'memory' && typeof this.store.fallback !== 'function' ? 'closed' : mode;
  }

  /** The decision (and its receipt, signed with `receiptSecret`) from a store answer. */
  toDecision(
    request: SpendRequest,
    result: SpendResult,
    spend: boolean,
    failure?: StoreFailure,
  ): Decision {
    return decisionOf(request, result, spend, failure, this.policy.warnAt, this.receipts);
  }

  /**
   * Whether this policy is in shadow mode and refused: on its own budget or lockout, or because the
   * store failed and the fail mode refuses. Shadow refuses nothing, a failing store included.
   */
  shadowRefuses(decision: Decision): boolean {
    return (
      (decision.receipt.limits === this.policy.limits
        ? this.policy.shadow
        : this.policyOf(decision.receipt.limits).shadow) === true &&
      !decision.allowed &&
      (decision.blockedBy !== undefined || decision.failure !== undefined)
    );
  }

  /**
   * A refusal of a policy in shadow mode, reported and let through: allowed (or, in a stack that
   * another part refused, refused with it), `shadowRefused`, no wait. Nothing was spent. A store
   * failure keeps its `failure` (reported to `onStoreFailure` as well).
   */
  shadowed(decision: Decision, allowed = true): Decision {
    const shadow = Object.freeze({
      ...decision,
      allowed,
      retryAfterMs: 0,
      shadowRefused: true as const,
    });
    this.reports.shadowRefusal(shadow);
    return shadow;
  }
}

/** The largest cost that can ever fit under these limits: the smallest burst (a limit's own). */
function maxCostOf(limits: readonly LimitRule[]): number {
  let max = Infinity;
  for (const rule of limits) if (rule.burst < max) max = rule.burst;
  return max;
}
