import type { PolicyOptions } from '../core/policy';
import { defineRedlimitMetadata, type ThrottleKeyFn } from './redlimit.metadata';

/** Options of `@Throttle(policy, options)`. */
export interface ThrottleOptions {
  /** Replaces the default key (method + route template + client IP). */
  readonly key?: ThrottleKeyFn;
  /** Units charged per request: a whole number from 1 to the policy's smallest limit. Default 1. */
  readonly cost?: number;
}

/**
 * Rate-limits a handler, or every handler of a controller, with a policy. Enforced by
 * {@link RedlimitGuard} (per controller with `@UseGuards(RedlimitGuard)`, or app-wide as
 * `APP_GUARD`). A handler's `@Throttle` wins over its controller's.
 *
 * Works on HTTP routes, GraphQL resolvers, WebSocket gateway handlers and microservice handlers.
 * The default key is the HTTP method + route template + client IP (`POST /items/:id|ip:…`), so
 * endpoints sharing a policy keep separate budgets and `/items/1` and `/items/2` share one;
 * elsewhere the context type + GraphQL `Type.field` or handler `Class.method` + client IP
 * (`graphql Query.items|ip:…`). A key function (second argument) replaces it; it may return
 * several keys, charged as one decision.
 *
 * @param policy a policy name from `RedlimitModule.forRoot({ policies })`, or an inline policy
 * @param keyOrOptions a key function, or `{ key?, cost? }`
 * @example
 * ```ts
 * @Controller('links')
 * @UseGuards(RedlimitGuard)
 * @Throttle('api')
 * export class LinksController {
 *   @Post()
 *   @Throttle('links', (ctx) => `user:${ctx.switchToHttp().getRequest<{ user: { id: string } }>().user.id}`)
 *   create() {}
 * }
 * ```
 */
export function Throttle(
  policy: string | PolicyOptions,
  keyOrOptions?: ThrottleKeyFn | ThrottleOptions,
): ClassDecorator & MethodDecorator {
  if (typeof policy !== 'string' && (policy === null || typeof policy !== 'object')) {
    throw new TypeError('@Throttle() needs a policy name or a policy object');
  }
  const options: ThrottleOptions =
    typeof keyOrOptions === 'function' ? { key: keyOrOptions } : (keyOrOptions ?? {});
  if (options.key !== undefined && typeof options.key !== 'function') {
    throw new TypeError('@Throttle() key must be a function of the ExecutionContext');
  }
  const throttle = {
    policy,
    ...(options.key && { key: options.key }),
    ...(options.cost !== undefined && { cost: options.cost }),
  };
  return (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    defineRedlimitMetadata(descriptor ? (descriptor.value as object) : target, { throttle });
  };
}
