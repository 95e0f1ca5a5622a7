import { BadRequestException, type ExecutionContext } from '@nestjs/common';
import type { Decision } from '../../core/decision';
import {
  AccessDeniedException,
  AccessDeniedGraphQLError,
  accessDeniedPayload,
} from '../access/access-denied.error';
import { contextResponse, redlimitContextType } from './execution-context.util';
import { setResponseHeader } from '../../http/http-request.util';
import type { IdentityInputError } from '../../http/identity-input.error';
import { RateLimitGraphQLError, rateLimitErrorPayload } from './rate-limit-graphql.error';
import { rateLimitHttpException } from '../throttle/rate-limit.exception';
import { retryAfterSeconds } from '../../http/rate-limit-headers.util';

type ContextErrorClass = new (error: object) => Error;

const optionalClasses = new Map<string, ContextErrorClass | undefined>();

/**
 * The error a refused GraphQL resolver, WebSocket handler or microservice handler throws:
 *
 * - HTTP: the 429 or 503 of {@link rateLimitHttpException}, with `Retry-After` set.
 * - GraphQL: a {@link RateLimitGraphQLError} (`extensions.code` `RATE_LIMITED`, `retryAfterMs`);
 *   `Retry-After` is set on the HTTP response when the GraphQL context has one.
 * - WebSocket: a `WsException` whose error is a {@link RateLimitErrorPayload}.
 * - RPC: an `RpcException` whose error is a {@link RateLimitErrorPayload}.
 *
 * `WsException` and `RpcException` are loaded from `@nestjs/websockets` and
 * `@nestjs/microservices` only when such a handler is refused: an app with gateways or
 * microservices has them installed, and redlimit/nest needs neither.
 *
 * @example
 * if (!decision.allowed) throw contextRefusal(context, decision);
 */
export function contextRefusal(context: ExecutionContext, decision: Decision): Error {
  const type = redlimitContextType(context);
  if (type === 'ws' || type === 'rpc') {
    return socketError(type, rateLimitErrorPayload(decision));
  }
  const response = contextResponse(context);
  if (response) {
    setResponseHeader(response, 'Retry-After', String(retryAfterSeconds(decision.retryAfterMs)));
  }
  return type === 'graphql'
    ? new RateLimitGraphQLError(decision)
    : rateLimitHttpException(decision);
}

/**
 * The error to throw for a request whose identity value was refused ({@link IdentityInputError}),
 * in the handler's context: over HTTP a 400 whose body is `{ statusCode: 400, error: 'Bad
 * Request', message, part, sources? }`; in a GraphQL resolver the error itself
 * (`extensions.code` `BAD_USER_INPUT`); in a gateway or a microservice handler a `WsException` /
 * `RpcException` with `{ status: 'error', code: 'BAD_USER_INPUT', message, part, sources? }`.
 *
 * @example
 * catch (error) { if (error instanceof IdentityInputError) throw contextInputRefusal(context, error); }
 */
export function contextInputRefusal(context: ExecutionContext, error: IdentityInputError): Error {
  const type = redlimitContextType(context);
  const { part, sources } = error.extensions;
  const detail = { message: error.message, part, ...(sources && { sources }) };
  if (type === 'ws' || type === 'rpc') {
    const payload = { status: 'error', code: 'BAD_USER_INPUT', ...detail };
    return socketError(type, payload);
  }
  if (type === 'graphql') return error;
  return new BadRequestException({ statusCode: 400, error: 'Bad Request', ...detail });
}

/**
 * The error for a call the module's `deny` list refused, in the handler's context: over HTTP the
 * 403 {@link AccessDeniedException}; in a GraphQL resolver an {@link AccessDeniedGraphQLError}
 * (`extensions.code` `FORBIDDEN`); in a gateway or a microservice handler a `WsException` /
 * `RpcException` with {@link accessDeniedPayload} (`code` `FORBIDDEN`).
 *
 * @example
 * if (verdict === 'denied') throw contextDenial(context);
 */
export function contextDenial(context: ExecutionContext): Error {
  const type = redlimitContextType(context);
  if (type === 'ws' || type === 'rpc') {
    return socketError(type, accessDeniedPayload());
  }
  return type === 'graphql' ? new AccessDeniedGraphQLError() : new AccessDeniedException();
}

/**
 * A `WsException` (gateway) or `RpcException` (microservice) carrying `payload`; without the
 * package installed, an Error with the same `error` and `getError()`.
 */
function socketError(type: 'ws' | 'rpc', payload: { readonly message: string }): Error {
  const ErrorClass =
    type === 'ws'
      ? optionalClass('@nestjs/websockets', 'WsException')
      : optionalClass('@nestjs/microservices', 'RpcException');
  if (ErrorClass) return new ErrorClass(payload);
  return Object.assign(new Error(payload.message), { error: payload, getError: () => payload });
}

/** An exported class of an optional package, or `undefined` when it is not installed. */
function optionalClass(pkg: string, name: string): ContextErrorClass | undefined {
  const key = `${pkg}#${name}`;
  if (!optionalClasses.has(key)) {
    let found: ContextErrorClass | undefined;
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const exported = (require(pkg) as Record<string, unknown>)[name];
      if (typeof exported === 'function') found = exported as ContextErrorClass;
    } catch {
      found = undefined;
    }
    optionalClasses.set(key, found);
  }
  return optionalClasses.get(key);
}
