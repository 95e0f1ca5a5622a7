import { HttpException, HttpStatus } from '@nestjs/common';

/** What a denied caller is told; it never says which list or entry matched. */
export const ACCESS_DENIED_MESSAGE = 'Access denied';

/**
 * What a denied GraphQL, WebSocket or microservice caller is told (the error of a `WsException`
 * and an `RpcException`): `code` `FORBIDDEN`, as a GraphQL server says it.
 */
export interface AccessDeniedPayload {
  /** Always `'error'`. */
  readonly status: 'error';
  /** Always `'FORBIDDEN'`, as GraphQL servers name a refused caller. */
  readonly code: 'FORBIDDEN';
  /** Always `'Access denied'` (`ACCESS_DENIED_MESSAGE`): it never says what matched. */
  readonly message: string;
}

/**
 * The payload of a call refused by the module's `deny` list outside HTTP.
 *
 * @example
 * accessDeniedPayload(); // { status: 'error', code: 'FORBIDDEN', message: 'Access denied' }
 */
export function accessDeniedPayload(): AccessDeniedPayload {
  return { status: 'error', code: 'FORBIDDEN', message: ACCESS_DENIED_MESSAGE };
}

/**
 * 403 Forbidden for a request the module's `deny` list names, with the body
 * `{ statusCode: 403, error: 'Forbidden', message: 'Access denied' }`. Nothing was charged, and
 * the response carries no rate-limit headers.
 *
 * @example
 * if (verdict === 'denied') throw new AccessDeniedException();
 */
export class AccessDeniedException extends HttpException {
  constructor() {
    super(
      { statusCode: HttpStatus.FORBIDDEN, error: 'Forbidden', message: ACCESS_DENIED_MESSAGE },
      HttpStatus.FORBIDDEN,
    );
  }
}

/**
 * Thrown from a GraphQL resolver the module's `deny` list refused: graphql-js wraps it in a
 * `GraphQLError` that keeps `extensions`, so the response carries
 * `{ message: 'Access denied', path, extensions: { code: 'FORBIDDEN' } }`.
 *
 * @example
 * if (verdict === 'denied') throw new AccessDeniedGraphQLError();
 */
export class AccessDeniedGraphQLError extends Error {
  /** Always `'AccessDeniedGraphQLError'`: survives serialisation and minification, unlike the class name. */
  override readonly name = 'AccessDeniedGraphQLError';
  /** Copied into the GraphQL error's `extensions`. */
  readonly extensions: {
    /** Always `'FORBIDDEN'`. */
    readonly code: 'FORBIDDEN';
  } = { code: 'FORBIDDEN' };

  constructor() {
    super(ACCESS_DENIED_MESSAGE);
  }
}
