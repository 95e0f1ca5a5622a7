import { REDLIMIT_METADATA } from '../module/redlimit.constants';
import { checkCostOption } from './request-cost.util';
import {
  type CostFn,
  defineRedlimitMetadata,
  type PolicyRef,
  type RedlimitMetadata,
  type ThrottleKeyFn,
  type ThrottleMetadata,
} from './redlimit.metadata';

/** Options of `@Throttle(policy, options)`. */
export interface ThrottleOptions {
  /** Replaces the default key (handler + route template + tracker). */
  readonly key?: ThrottleKeyFn;
  /**
   * Units charged per request: a whole number from 1 to the policy's smallest limit, or a function
   * of the call's context returning one (else the request is refused as bad input, HTTP 400).
   * Default 1.
   */
  readonly cost?: number | CostFn;
  /**
   * Who is charged without a key function: `'ip'` (default) or `'apiKey'`, the API key header
   * (module option `apiKey.header`, default `x-api-key`) hashed, or the client IP when a request
   * has none.
   */
  readonly by?: 'ip' | 'apiKey';
  /**
   * `'route'` (default): a budget per route and caller; `'app'`: one budget per caller across
   * every route this layer covers (a per-plan or per-IP limit over the whole API).
   */
  readonly scope?: 'route' | 'app';
  /**
   * Replace instead of stacking: on a handler, its layers replace the controller's and the default
   * policy; on a controller, its layers replace the default policy.
   */
  readonly override?: boolean;
}

/**
 * Rate-limits a handler, or every handler of a controller, with a policy. Enforced by
 * {@link RedlimitGuard} (per controller with `@UseGuards(RedlimitGuard)`, or app-wide as
 * `APP_GUARD`). Layers stack: a controller's `@Throttle`, a handler's (several on one target
 * are allowed) and the module's `defaultPolicy` all apply to a request, checked and spent as ONE
 * atomic decision: allowed only if every layer allows, a refusal spends on none and names the
 * layer's policy. `override: true` on a handler's layer replaces the others instead.
 *
 * Works on HTTP routes, GraphQL resolvers, WebSocket gateway handlers and microservice handlers.
 * The default key is the handler (controller + method name) + route template + client IP
 * (`ItemsController.get /items/:id|ip:…`): endpoints sharing a policy keep separate budgets,
 * `/items/1` and `/items/2` share one, and an `@All` handler has one whatever the HTTP method;
 * elsewhere the context type + GraphQL `Type.field` or handler `Class.method` + client IP
 * (`graphql Query.items|ip:…`). A key function (second argument) replaces it; it may return
 * several keys, charged as one decision.
 *
 * @param policy a policy name from `RedlimitModule.forRoot({ policies })`, an inline policy, or a
 *   resolver `(ctx) => name` run per request (e.g. the plan of the caller's API key)
 * @param keyOrOptions a key function, or `{ key?, cost?, by?, scope?, override? }`
 * @example
 * ```ts
 * @Controller('links')
 * @UseGuards(RedlimitGuard)
 * @Throttle((ctx) => plans.of(ctx), { by: 'apiKey', scope: 'app' }) // the caller's plan, API-wide
 * export class LinksController {
 *   @Post('export')
 *   @Throttle('export', { by: 'apiKey' }) // stacked on the plan: one decision
 *   export() {}
 *
 *   @Get('status')
 *   @Throttle('status', { override: true }) // only this layer here
 *   status() {}
 * }
 * ```
 */
export function Throttle(
  policy: PolicyRef,
  keyOrOptions?: ThrottleKeyFn | ThrottleOptions,
): ClassDecorator & MethodDecorator {
  if (
    typeof policy !== 'string' &&
    typeof policy !== 'function' &&
    (policy === null || typeof policy !== 'object')
  ) {
    throw new TypeError('@Throttle() needs a policy name, a policy object or a policy resolver');
  }
  const options: ThrottleOptions =
    typeof keyOrOptions === 'function' ? { key: keyOrOptions } : (keyOrOptions ?? {});
  if (options.key !== undefined && typeof options.key !== 'function') {
    throw new TypeError('@Throttle() key must be a function of the ExecutionContext');
  }
  if (options.by !== undefined && options.by !== 'ip' && options.by !== 'apiKey') {
    throw new TypeError(
      `@Throttle() by must be 'ip' or 'apiKey'; got ${JSON.stringify(options.by)}`,
    );
  }
  if (options.scope !== undefined && options.scope !== 'route' && options.scope !== 'app') {
    throw new TypeError(
      `@Throttle() scope must be 'route' or 'app'; got ${JSON.stringify(options.scope)}`,
    );
  }
  checkCostOption(options.cost, '@Throttle()');
  const layer: ThrottleMetadata = {
    policy,
    ...(options.key && { key: options.key }),
    ...(options.cost !== undefined && { cost: options.cost }),
    ...(options.by !== undefined && { by: options.by }),
    ...(options.scope !== undefined && { scope: options.scope }),
    ...(options.override === true && { override: true }),
  };
  return (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    const on = descriptor ? (descriptor.value as object) : target;
    const current = Reflect.getOwnMetadata(REDLIMIT_METADATA, on) as RedlimitMetadata | undefined;
    const layers: readonly ThrottleMetadata[] = current?.throttle || [];
    // Decorators apply bottom-up: keep the topmost first.
    defineRedlimitMetadata(on, { throttle: [layer, ...layers] });
  };
}
