import { createParamDecorator, type ExecutionContext, UseInterceptors } from '@nestjs/common';
import { AttemptDispatchInterceptor } from './attempt-dispatch.interceptor';
import type { Attempt as CoreAttempt } from '../../core/attempt';
import { checkUnknownOptions } from '../../core/options.util';
import { loginPartOf, REQUESTER_PARTS, resolveAttemptPart } from './attempt-part.util';
import { scopedAttempt } from './attempt-scope.util';
import { checkCostOption } from '../throttle/request-cost.util';
import { REDLIMIT_METADATA, REQUEST_ATTEMPT } from '../module/redlimit.constants';
import {
  type AttemptOptions,
  type AttemptPart,
  defineRedlimitMetadata,
  type RedlimitMetadata,
} from '../throttle/redlimit.metadata';

/**
 * The spend `@Attempt()` hands a handler (the core `Attempt`): call `refund()` when the attempt
 * proves legitimate; it can be passed on to services.
 */
export type Attempt = CoreAttempt;

const OPTION_KEYS: ReadonlySet<string> = new Set([
  'policy',
  'cost',
  'refundOn',
  'headers',
  'devices',
]);

const injectAttempt = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  const attempt =
    context.getType() === 'http'
      ? context.getArgByIndex<Record<symbol, unknown>>(0)[REQUEST_ATTEMPT]
      : scopedAttempt(context.getArgs());
  if (attempt === undefined) {
    throw new Error(
      '@Attempt(): no attempt for this call. Import RedlimitModule (its interceptor spends ' +
        'before the handler runs); @Attempt works on HTTP routes, GraphQL resolvers, ' +
        'WebSocket gateway and microservice handlers.',
    );
  }
  return attempt;
});

/**
 * Spends before the handler runs and hands it the {@link Attempt}; only importing
 * `RedlimitModule` is needed. Each part is its own key (`ip:…`, `email:…`), all charged in one
 * decision, so per-IP and per-account limits cannot disagree. Field values are normalised
 * ({@link normalizeIdentity}: Unicode-equivalent spellings share a budget) and hashed, so no
 * email sits in Redis in plain text. A missing or empty value counts as one shared "missing" value of that part;
 * a value that is not a string or a finite number, or a bare field whose sources disagree, is
 * refused (HTTP 400) before anything is charged.
 *
 * Refused → 429 (`Retry-After`, rate-limit headers) and the handler never runs; in a GraphQL
 * resolver a {@link RateLimitGraphQLError}, in a gateway a `WsException`, in a microservice an
 * `RpcException`, each carrying `retryAfterMs`. After the handler returns or throws, the spend is
 * refunded if it called `attempt.refund()` (or `refundOn` says so) and kept otherwise — exactly
 * once; a refund that fails is logged, never sent to the client. The decorator attaches its
 * interceptor to its own handler (gateways included), so other routes pay for none.
 *
 * @param parts `'ip'` (client IP), `'user'` (`user.id`, else `.sub`), `'apiKey'`, a field with
 *   the source the handler reads (`'body.email'`, `'params.email'`, `'query.email'`,
 *   `'headers.x-user'`, `'body.user.email'`; `'args.…'` in resolvers, `'data.…'` in gateways and
 *   microservices) or bare (`'email'`: HTTP body, params and query, which must agree), a function
 *   of the context, or `{ field | value, name?, normalize? }` ({@link AttemptPartSpec})
 * @param options `policy` (default: the module's `defaultPolicy`), `cost` (a number, or a function
 *   of the context: a reservation the handler settles with `attempt.adjust(actualCost)`),
 *   `refundOn`, `headers` (`'requester'`, the default: rate-limit headers describe the attempt's
 *   budget only when every part is the requester's own; `'all'`); anything else is an error
 * @throws TypeError when a part or an option is malformed, naming it
 * @example
 * ```ts
 * @Post('sign-in')
 * async signIn(@Body() body: SignInDto, @Attempt(['ip', 'body.email'], { policy: 'login' }) attempt: Attempt) {
 *   const user = await this.users.verify(body.email, body.password); // throws: the cost stays
 *   attempt.refund(); // right password: it was free
 *   return user;
 * }
 * ```
 */
export function Attempt(
  parts: AttemptPart | readonly AttemptPart[],
  options: AttemptOptions = {},
): ParameterDecorator {
  const list: readonly AttemptPart[] = Array.isArray(parts) ? parts : [parts as AttemptPart];
  if (list.length === 0) throw new TypeError('@Attempt() needs at least one part');
  list.forEach((part, index) => resolveAttemptPart(part, index)); // throws naming a bad part
  if (options === null || typeof options !== 'object') {
    throw new TypeError(
      '@Attempt() options must be an object: { policy?, cost?, refundOn?, headers?, devices? }',
    );
  }
  checkUnknownOptions(
    options,
    OPTION_KEYS,
    '@Attempt()',
    'expected policy, cost, refundOn, headers, devices',
  );
  checkCostOption(options.cost, '@Attempt()');
  if (
    options.headers !== undefined &&
    options.headers !== 'requester' &&
    options.headers !== 'all'
  ) {
    throw new TypeError(
      `@Attempt() headers must be 'requester' or 'all'; got ${JSON.stringify(options.headers)}`,
    );
  }
  checkDevicesOption(options, list);
  const { refundOn } = options;
  if (refundOn !== undefined && refundOn !== 'success' && typeof refundOn !== 'function') {
    throw new TypeError("@Attempt() refundOn must be 'success' or a function of the outcome");
  }
  return (target: object, propertyKey: string | symbol | undefined, index: number) => {
    const handler =
      propertyKey === undefined
        ? undefined
        : (target as Record<string | symbol, unknown>)[propertyKey];
    if (typeof handler !== 'function') {
      throw new TypeError('@Attempt() decorates a parameter of a route handler');
    }
    const existing = Reflect.getOwnMetadata(REDLIMIT_METADATA, handler) as
      RedlimitMetadata | undefined;
    if (existing?.attempt) {
      throw new TypeError(`@Attempt() is used twice on ${String(propertyKey)}(); use it once`);
    }
    defineRedlimitMetadata(handler, { attempt: { ...options, parts: list } });
    injectAttempt()(target, propertyKey, index);
    // Only this handler gets the interceptor (what @UseInterceptors does on a method).
    const descriptor = Object.getOwnPropertyDescriptor(target, propertyKey!)!;
    UseInterceptors(AttemptDispatchInterceptor)(target, propertyKey!, descriptor);
  };
}

/**
 * `devices` is `true` (the login is the one part that is not the requester's own `ip`, `apiKey`
 * or `user`) or names a login part as written; a fixed cost only.
 */
function checkDevicesOption(options: AttemptOptions, parts: readonly AttemptPart[]): void {
  const { devices } = options;
  if (devices === undefined || devices === false) return;
  if (devices === true) {
    loginPartOf(parts, true); // throws when there is not exactly one candidate
  } else if (typeof devices !== 'string' || !parts.includes(devices)) {
    throw new TypeError(
      `@Attempt() devices must be true or name one of its parts as written (e.g. 'body.email'); got ${JSON.stringify(devices)}`,
    );
  } else if (REQUESTER_PARTS.has(devices)) {
    throw new TypeError(`@Attempt() devices names the login part; '${devices}' is not a login`);
  }
  if (typeof options.cost === 'function') {
    throw new TypeError(
      '@Attempt() devices takes a fixed cost: a reservation settled later is not a sign-in',
    );
  }
}
