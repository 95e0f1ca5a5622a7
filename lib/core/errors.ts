import type { Decision } from './decision';

/**
 * Thrown by {@link Limiter.attempt} and {@link Limiter.begin} when the budget refuses the call.
 * The work the attempt would have guarded never ran, and nothing was spent.
 *
 * @example
 * try {
 *   await limiter.attempt(['ip:203.0.113.7'], signIn);
 * } catch (err) {
 *   if (err instanceof RateLimitedError) res.set('Retry-After', String(Math.ceil(err.retryAfterMs / 1000)));
 * }
 */
export class RateLimitedError extends Error {
  /** Always `'RateLimitedError'`: survives serialisation and minification, unlike the class name. */
  override readonly name = 'RateLimitedError';
  /** Milliseconds until the same call would be allowed if nobody else spends. */
  readonly retryAfterMs: number;

  constructor(
    /** The refused decision. */
    readonly decision: Decision,
  ) {
    super(
      `Rate limit of policy '${decision.policy}' exceeded` +
        (decision.blockedBy ? ` on key '${decision.blockedBy.key}'` : '') +
        `; retry in ${decision.retryAfterMs} ms`,
    );
    this.retryAfterMs = decision.retryAfterMs;
  }
}

/**
 * Thrown by {@link Limiter.attempt} and {@link Limiter.begin} when the store failed (unreachable,
 * erroring, or slower than `timeoutMs`) and the policy fails closed. Unlike
 * {@link RateLimitedError}, it says nothing about the caller's budget: HTTP maps it to 503.
 *
 * @example
 * try {
 *   await limiter.attempt(keys, sendOtp);
 * } catch (err) {
 *   if (err instanceof StoreUnavailableError) return reply.status(503).header('Retry-After', '1').send();
 *   throw err;
 * }
 */
export class StoreUnavailableError extends Error {
  /** Always `'StoreUnavailableError'`: survives serialisation and minification, unlike the class name. */
  override readonly name = 'StoreUnavailableError';
  /** Suggested wait before retrying, in ms. */
  readonly retryAfterMs: number;

  constructor(
    /** The refused decision, with `failure` set. */
    readonly decision: Decision,
  ) {
    super(
      `Rate-limit store unavailable for policy '${decision.policy}' (${decision.failure?.reason ?? 'error'}): ` +
        (decision.failure?.error.message ?? 'unknown error'),
      { cause: decision.failure?.error },
    );
    this.retryAfterMs = decision.retryAfterMs;
  }
}

/**
 * The store did not answer within `timeoutMs`, or its answer came after the caller's deadline.
 * Decisions absorb it (see {@link Decision.failure}); it reaches callers only from `refund` and
 * `reset`.
 *
 * @example
 * await limiter.reset(keys).catch((err) => {
 *   if (err instanceof StoreTimeoutError) logger.warn('unlock timed out; try again');
 * });
 */
export class StoreTimeoutError extends Error {
  /** Always `'StoreTimeoutError'`: survives serialisation and minification, unlike the class name. */
  override readonly name = 'StoreTimeoutError';

  constructor(
    /** The limit that passed, in ms, when the waiting side knows it. */
    readonly timeoutMs?: number,
    detail?: string,
  ) {
    super(
      (timeoutMs === undefined
        ? "the rate-limit store missed the caller's deadline"
        : `the rate-limit store did not answer within ${timeoutMs} ms`) +
        (detail ? `: ${detail}` : ''),
    );
  }
}

/** The error a refused decision throws: the store failing closed, or the budget. */
export function refusedError(decision: Decision): Error {
  return decision.failure?.failMode === 'closed'
    ? new StoreUnavailableError(decision)
    : new RateLimitedError(decision);
}
