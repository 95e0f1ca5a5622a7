import { monotonicNow } from '../core/clock.util';

/** Where a wait between two attempts came from. */
export type RetryDelaySource = 'retry-after' | 'ratelimit' | 'backoff';

/**
 * Told to `onRetry` before each wait: which attempt was refused, with what status, and how long the
 * client will wait before the next one.
 *
 * @example
 * onRetry: ({ attempt, status, delayMs, source }) =>
 *   logger.warn(`attempt ${attempt} got ${status}; retrying in ${delayMs} ms (${source})`);
 */
export interface RetryNotice {
  /** The attempt that was refused, from 1. */
  readonly attempt: number;
  /** Its status (one of `retryOn`). */
  readonly status: number;
  /** The wait before the next attempt, in ms. */
  readonly delayMs: number;
  /** `Retry-After`, the `RateLimit` header's `t`, or backoff with full jitter. */
  readonly source: RetryDelaySource;
}

/**
 * How a client retries refused calls: on a status in `retryOn` it waits what the server asked
 * (`Retry-After` as seconds or an HTTP date; failing that, `t` of a `RateLimit` item with `r=0`),
 * else an exponential backoff with full jitter, within `maxAttempts` and `maxTotalMs`.
 *
 * @example
 * const options: RetryAfterOptions = { maxAttempts: 4, maxTotalMs: 10_000, retryOn: [429] };
 */
export interface RetryAfterOptions {
  /** Attempts in all, the first included; a whole number ≥ 1. Default 3. */
  maxAttempts?: number;
  /**
   * Time from the first attempt within which every retry must start, in ms (≥ 0). A wait that
   * would end later is not taken: the call gives up at once with {@link RetryBudgetExceededError}.
   * Default 30 000.
   */
  maxTotalMs?: number;
  /** Backoff cap of the first retry, in ms (> 0); doubles with each retry. Default 200. */
  baseDelayMs?: number;
  /** Largest backoff cap, in ms (≥ `baseDelayMs`); does not shorten a server's `Retry-After`. Default 10 000. */
  maxDelayMs?: number;
  /** Statuses that are retried. Default `[429, 503]`. */
  retryOn?: readonly number[];
  /** Aborts a wait in progress (the call rejects with `signal.reason`) and any further attempt. */
  signal?: AbortSignal;
  /** Called before each wait, e.g. to log it. */
  onRetry?: (notice: RetryNotice) => void;
  /** Waits `ms` (rejecting with `signal.reason` on abort). Default: a timer. For tests. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A number in [0, 1) for the jitter. Default `Math.random`. For tests. */
  random?: () => number;
  /** Epoch ms, for the budget and for `Retry-After` dates. Default: a monotonic clock. For tests. */
  now?: () => number;
}

/** {@link RetryAfterOptions} checked, with defaults. */
export interface ResolvedRetryOptions {
  readonly maxAttempts: number;
  readonly maxTotalMs: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly retryOn: ReadonlySet<number>;
  readonly onRetry: ((notice: RetryNotice) => void) | undefined;
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly random: () => number;
  readonly now: () => number;
}

/**
 * Checks the options and fills in defaults.
 *
 * @throws TypeError / RangeError naming the offending option
 * @example
 * resolveRetryOptions({ maxAttempts: 0 }); // RangeError: maxAttempts must be a whole number ≥ 1, got 0
 */
export function resolveRetryOptions(options: RetryAfterOptions = {}): ResolvedRetryOptions {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`retry options must be an object, got ${String(options)}`);
  }
  const maxAttempts = options.maxAttempts ?? 3;
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1) {
    throw new RangeError(`maxAttempts must be a whole number ≥ 1, got ${String(maxAttempts)}`);
  }
  const maxTotalMs = options.maxTotalMs ?? 30_000;
  if (typeof maxTotalMs !== 'number' || Number.isNaN(maxTotalMs) || maxTotalMs < 0) {
    throw new RangeError(`maxTotalMs must be a number of ms ≥ 0, got ${String(maxTotalMs)}`);
  }
  const baseDelayMs = options.baseDelayMs ?? 200;
  if (typeof baseDelayMs !== 'number' || !Number.isFinite(baseDelayMs) || baseDelayMs <= 0) {
    throw new RangeError(
      `baseDelayMs must be a finite number of ms > 0, got ${String(baseDelayMs)}`,
    );
  }
  const maxDelayMs = options.maxDelayMs ?? Math.max(10_000, baseDelayMs);
  if (typeof maxDelayMs !== 'number' || Number.isNaN(maxDelayMs) || maxDelayMs < baseDelayMs) {
    throw new RangeError(
      `maxDelayMs must be a number of ms ≥ baseDelayMs (${baseDelayMs}), got ${String(maxDelayMs)}`,
    );
  }
  const retryOn = options.retryOn ?? [429, 503];
  if (!Array.isArray(retryOn)) {
    throw new TypeError(`retryOn must be an array of HTTP statuses, got ${String(retryOn)}`);
  }
  for (const status of retryOn as unknown[]) {
    if (!Number.isInteger(status) || (status as number) < 100 || (status as number) > 599) {
      throw new RangeError(`retryOn must hold HTTP statuses (100–599), got ${String(status)}`);
    }
  }
  for (const name of ['onRetry', 'sleep', 'random', 'now'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new TypeError(`${name} must be a function, got ${typeof options[name]}`);
    }
  }
  return {
    maxAttempts,
    maxTotalMs,
    baseDelayMs,
    maxDelayMs,
    retryOn: new Set(retryOn),
    onRetry: options.onRetry,
    sleep: options.sleep ?? sleep,
    random: options.random ?? Math.random,
    now: options.now ?? monotonicNow,
  };
}

/**
 * Resolves after `ms`, or rejects with `signal.reason` as soon as the signal aborts.
 *
 * @example
 * await sleep(1000, AbortSignal.timeout(500)); // rejects after 500 ms with a TimeoutError
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
