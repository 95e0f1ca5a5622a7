import type { Decision } from '../../core/decision';
import { retryAfterSeconds } from '../../http/rate-limit-headers.util';

/** Why a GraphQL, WebSocket or microservice call was refused. */
export type RateLimitErrorCode = 'RATE_LIMITED' | 'RATE_LIMIT_UNAVAILABLE';

/**
 * What a refused GraphQL, WebSocket or microservice caller is told: `code` `RATE_LIMITED` (out
 * of budget) or `RATE_LIMIT_UNAVAILABLE` (the store failed and the policy fails closed), the
 * policy, and when to retry. The error of a `WsException` and an `RpcException`.
 */
export interface RateLimitErrorPayload {
  /** Always `'error'`. */
  readonly status: 'error';
  /** `RATE_LIMITED` (out of budget) or `RATE_LIMIT_UNAVAILABLE` (store failed, fails closed). */
  readonly code: RateLimitErrorCode;
  /** A sentence naming the policy and the wait in seconds. */
  readonly message: string;
  /** The policy that refused. */
  readonly policy: string;
  /** When the same call would be allowed, in milliseconds (exact). */
  readonly retryAfterMs: number;
  /** The same in whole seconds, rounded up, at least 1 (like HTTP `Retry-After`). */
  readonly retryAfter: number;
}

/** The `extensions` of a {@link RateLimitGraphQLError}. */
export interface RateLimitGraphQLErrorExtensions {
  /** `RATE_LIMITED` (out of budget) or `RATE_LIMIT_UNAVAILABLE` (store failed, fails closed). */
  readonly code: RateLimitErrorCode;
  /** The policy that refused. */
  readonly policy: string;
  /** When the same call would be allowed, in milliseconds (exact). */
  readonly retryAfterMs: number;
  /** The same in whole seconds, rounded up, at least 1 (like HTTP `Retry-After`). */
  readonly retryAfter: number;
}

/**
 * The payload of a refused decision outside HTTP.
 *
 * @example
 * rateLimitErrorPayload(decision);
 * // { status: 'error', code: 'RATE_LIMITED', message: "Rate limit of policy 'login' exceeded; retry in 740 s",
 * //   policy: 'login', retryAfterMs: 739412, retryAfter: 740 }
 */
export function rateLimitErrorPayload(decision: Decision): RateLimitErrorPayload {
  const retryAfter = retryAfterSeconds(decision.retryAfterMs);
  const unavailable = decision.failure?.failMode === 'closed';
  return {
    status: 'error',
    code: unavailable ? 'RATE_LIMIT_UNAVAILABLE' : 'RATE_LIMITED',
    message: unavailable
      ? `Rate limiting for policy '${decision.policy}' is unavailable; retry in ${retryAfter} s`
      : `Rate limit of policy '${decision.policy}' exceeded; retry in ${retryAfter} s`,
    policy: decision.policy,
    retryAfterMs: decision.retryAfterMs,
    retryAfter,
  };
}

/**
 * Thrown from a refused GraphQL resolver. It is a plain `Error` with `extensions` (redlimit does
 * not depend on `graphql`): graphql-js wraps it in a `GraphQLError` that keeps these extensions,
 * so the response carries `{ message, path, extensions: { code: 'RATE_LIMITED', policy,
 * retryAfterMs, retryAfter } }`.
 *
 * @example
 * if (!decision.allowed) throw new RateLimitGraphQLError(decision);
 */
export class RateLimitGraphQLError extends Error {
  /** Always `'RateLimitGraphQLError'`: survives serialisation and minification, unlike the class name. */
  override readonly name = 'RateLimitGraphQLError';
  /** Copied into the GraphQL error's `extensions`. */
  readonly extensions: RateLimitGraphQLErrorExtensions;

  constructor(
    /** The refused decision. */
    readonly decision: Decision,
  ) {
    const { code, message, policy, retryAfterMs, retryAfter } = rateLimitErrorPayload(decision);
    super(message, { cause: decision.failure?.error });
    this.extensions = { code, policy, retryAfterMs, retryAfter };
  }
}
