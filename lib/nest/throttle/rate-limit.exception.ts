import { HttpException, HttpStatus } from '@nestjs/common';
import type { Decision } from '../../core/decision';
import { retryAfterSeconds } from '../../http/rate-limit-headers.util';

/** JSON body of a 429 or 503 sent by redlimit. */
export interface RateLimitResponseBody {
  /** 429 (out of budget) or 503 (the store failed and the policy fails closed). */
  readonly statusCode: number;
  /** The status text: `'Too Many Requests'` or `'Service Unavailable'`. */
  readonly error: string;
  /** A sentence naming the policy and the wait in seconds. */
  readonly message: string;
  /** The policy that refused. */
  readonly policy: string;
  /** Same as the `Retry-After` header: whole seconds, at least 1. */
  readonly retryAfter: number;
}

/**
 * 429 Too Many Requests for a refused decision; its body names the policy. The guard and the
 * interceptor set `Retry-After` and the rate-limit headers before throwing it.
 *
 * @example
 * if (!decision.allowed) throw new RateLimitExceededException(decision);
 */
export class RateLimitExceededException extends HttpException {
  constructor(
    /** The refused decision. */
    readonly decision: Decision,
  ) {
    super(
      responseBody(
        decision,
        HttpStatus.TOO_MANY_REQUESTS,
        'Too Many Requests',
        (s) => `Rate limit of policy '${decision.policy}' exceeded; retry in ${s} s`,
      ),
      HttpStatus.TOO_MANY_REQUESTS,
    );
  }
}

/**
 * 503 Service Unavailable: the rate-limit store failed (unreachable, erroring or slower than
 * `timeoutMs`) and the policy fails closed. Says nothing about the caller's budget.
 *
 * @example
 * if (decision.failure && !decision.allowed) throw new RateLimitUnavailableException(decision);
 */
export class RateLimitUnavailableException extends HttpException {
  constructor(
    /** The refused decision, with `failure` set. */
    readonly decision: Decision,
  ) {
    super(
      responseBody(
        decision,
        HttpStatus.SERVICE_UNAVAILABLE,
        'Service Unavailable',
        (s) => `Rate limiting for policy '${decision.policy}' is unavailable; retry in ${s} s`,
      ),
      HttpStatus.SERVICE_UNAVAILABLE,
      { cause: decision.failure?.error },
    );
  }
}

/**
 * The HTTP exception for a refused decision: 503 when the store failed and the policy fails
 * closed, else 429 (also when the in-process fallback of fail mode memory refused: that is a
 * budget answer).
 *
 * @example
 * if (!decision.allowed) throw rateLimitHttpException(decision);
 */
export function rateLimitHttpException(decision: Decision): HttpException {
  return decision.failure?.failMode === 'closed'
    ? new RateLimitUnavailableException(decision)
    : new RateLimitExceededException(decision);
}

function responseBody(
  decision: Decision,
  statusCode: number,
  error: string,
  message: (retryAfterSeconds: number) => string,
): RateLimitResponseBody {
  const retryAfter = retryAfterSeconds(decision.retryAfterMs);
  return { statusCode, error, message: message(retryAfter), policy: decision.policy, retryAfter };
}
