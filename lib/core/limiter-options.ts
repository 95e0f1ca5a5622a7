import { PolicyOverrides } from './policy-overrides';
import type { Decision, StoreFailure } from './decision';
import type { DecisionEvents } from './events';
import { checkOptions } from './options.util';
import { FAIL_MODES, type FailMode, type ResolvedPolicy } from './policy';
import type { Store } from './store';
import type { Sleep, WaitOptions } from './wait';

/** Per-call options of {@link Limiter.consume} and friends. */
export interface ConsumeOptions {
  /** Units to charge on every key: a whole number from 1 to the policy's smallest limit. Default 1. */
  readonly cost?: number;
}

/** Options of {@link Limiter}. */
export interface LimiterOptions {
  /**
   * What a decision does when the store fails or is slower than `timeoutMs`, unless the policy
   * sets its own: `'closed'` (default) refuses, `'open'` allows without enforcing, `'memory'`
   * limits in this process, with its share of the limit (a `RedisStore` divides it among the
   * processes of its fleet), until the store answers again.
   */
  readonly failMode?: FailMode;
  /** Longest wait for the store per call, in ms. Default 1000. */
  readonly timeoutMs?: number;
  /** `retryAfterMs` of a decision refused because the store failed. Default 1000. */
  readonly failureRetryAfterMs?: number;
  /**
   * Called for every store failure a decision absorbed (timeout or error). Default: a process
   * warning, at most one per limiter every 10 s.
   */
  readonly onStoreFailure?: (failure: StoreFailure, policy: string) => void;
  /**
   * Called when {@link Limiter.attempt} cannot apply a refund after its body finished (the cost is
   * then kept, which only errs on the safe side). Default: a process warning.
   */
  readonly onSettleError?: (error: unknown, decision: Decision) => void;
  /**
   * Where this limiter reports every decision, refund and store failure (see
   * {@link DecisionEvents}); share one between limiters to observe them all.
   */
  readonly events?: DecisionEvents;
  /**
   * Called for every refusal a policy in shadow mode let through (`decision.shadowRefused`).
   * Default: a process warning, at most one per limiter every 10 s, with the count since the last.
   */
  readonly onShadowRefusal?: (decision: Decision) => void;
  /**
   * How {@link Limiter.waitFor} and {@link Limiter.waitForAll} sleep between tries. Default: a
   * timer that honours the AbortSignal. A test on a controllable clock can advance it instead.
   */
  readonly sleep?: Sleep;
  /**
   * A secret (at least 16 characters) that authenticates this limiter's receipts: each spent
   * receipt carries an HMAC of its fields (`receipt.mac`), and a refund, adjustment, release or
   * extension of a receipt whose mac does not match (edited, forged, moved to another key, signed
   * with another secret) is refused with a TypeError before the store is touched. Set it when
   * receipts leave the process (stored as JSON, handed to a client): without it a receipt is a
   * bearer credential, and a copy with a made-up `spendId` refunds units never spent. Share it
   * between the instances that refund each other's receipts. Default: none.
   */
  readonly receiptSecret?: string;
  /**
   * Live limits: the overrides this limiter's calls run under (see {@link PolicyOverrides}); each
   * call uses the policy as the most specific override in force for its keys leaves it, looked up
   * in memory (no store read per call). Default: none.
   */
  readonly overrides?: PolicyOverrides;
}

/** Options of {@link Limiter.waitFor}: a cost, and how long to wait at most. */
export interface WaitForOptions extends ConsumeOptions, WaitOptions {}

/** The longest delay `setTimeout` honours (a longer one fires after 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Every option of {@link LimiterOptions}: any other is an error. */
const LIMITER_OPTIONS: readonly (keyof LimiterOptions)[] = [
  'failMode',
  'timeoutMs',
  'failureRetryAfterMs',
  'onStoreFailure',
  'receiptSecret',
  'onSettleError',
  'events',
  'onShadowRefusal',
  'sleep',
  'overrides',
];

/** Every option of {@link ConsumeOptions}. */
export const CONSUME_OPTIONS: readonly (keyof ConsumeOptions)[] = ['cost'];

/** The options of a call given none (checked once: nothing to check). */
export const NO_OPTIONS: ConsumeOptions = Object.freeze({});

/** A limiter's options, checked, with their defaults (see {@link checkLimiterOptions}). */
export interface LimiterSettings {
  /** The fail mode in force: the policy's, else the limiter's, else `'closed'`. */
  readonly failMode: FailMode;
  readonly timeoutMs: number;
  readonly failureRetryAfterMs: number;
  /** The secret, checked, to be kept only in the receipt signer. */
  readonly receiptSecret: string | undefined;
  /** The options, less `receiptSecret`. */
  readonly options: Omit<LimiterOptions, 'receiptSecret'>;
}

/**
 * Checks a limiter's options against its store and policy: known names only, a fail mode the store
 * can serve, timeouts a timer can keep, a long enough `receiptSecret` (whose length or type only
 * an error names, never the secret).
 *
 * @throws TypeError / RangeError naming the bad option
 * @example
 * checkLimiterOptions(store, resolvePolicy(policy), { timeoutMs: 250 }).failMode; // 'closed'
 */
export function checkLimiterOptions(
  store: Store,
  policy: ResolvedPolicy,
  options: LimiterOptions,
): LimiterSettings {
  checkOptions(options, LIMITER_OPTIONS, 'Limiter options');
  const { receiptSecret, ...rest } = options;
  const failMode = policy.failMode ?? options.failMode ?? 'closed';
  if (!FAIL_MODES.includes(failMode)) {
    throw new RangeError(
      `failMode must be 'closed', 'open' or 'memory'; got ${JSON.stringify(failMode)}`,
    );
  }
  if (failMode === 'memory' && typeof store.fallback !== 'function') {
    throw new TypeError(
      "failMode 'memory' needs a store with an in-process fallback (store.fallback(): RedisStore and MemoryStore have one)",
    );
  }
  if (options.overrides !== undefined && !(options.overrides instanceof PolicyOverrides)) {
    throw new TypeError('Limiter options.overrides must be a PolicyOverrides');
  }
  const timeoutMs = positiveMs(options.timeoutMs, 1000, 'timeoutMs');
  if (timeoutMs > MAX_TIMER_MS) {
    throw new RangeError(
      `timeoutMs must be at most ${MAX_TIMER_MS} (about 24.8 days, the longest timer Node keeps); got ${timeoutMs}`,
    );
  }
  const failureRetryAfterMs = positiveMs(options.failureRetryAfterMs, 1000, 'failureRetryAfterMs');
  if (
    receiptSecret !== undefined &&
    (typeof receiptSecret !== 'string' || receiptSecret.length < 16)
  ) {
    // Its length or type only: never the secret itself.
    throw new TypeError(
      `Limiter options.receiptSecret must be a string of at least 16 characters; got ${
        typeof receiptSecret === 'string' ? receiptSecret.length : `a ${typeof receiptSecret}`
      }`,
    );
  }
  return { failMode, timeoutMs, failureRetryAfterMs, receiptSecret, options: rest };
}

function positiveMs(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(
      `${name} must be a whole number of milliseconds of at least 1; got ${String(value)}`,
    );
  }
  return value;
}
