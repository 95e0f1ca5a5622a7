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
