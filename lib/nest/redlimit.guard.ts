import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import type { Decision } from '../core/decision';
import type { Limiter } from '../core/limiter';
import { type HttpRequestLike, type HttpResponseLike, routeTemplate } from './http-request.util';
import { LimiterRegistry } from './limiter.registry';
import { REQUEST_THROTTLED } from './redlimit.constants';
import { readRedlimitMetadata, type ThrottleMetadata } from './redlimit.metadata';
import { RedlimitHttp } from './redlimit-http.service';

/**
 * Enforces `@Throttle` (and, used as `APP_GUARD`, the module's `defaultPolicy` on every route
 * without `@Throttle` or `@SkipThrottle()`). Allowed requests get rate-limit headers; refused ones
 * a 429 with `Retry-After`; a store failure under fail mode `closed` a 503. Non-HTTP contexts
 * pass through.
 *
 * Subclass it to change who is tracked ({@link getTracker}), the keys ({@link generateKeys}),
 * skipping ({@link shouldSkip}) or the refusal ({@link throwRefusal}).
 *
 * @example
 * ```ts
 * // per controller
 * @UseGuards(RedlimitGuard)
 * @Throttle('api')
 * @Controller('items')
 * export class ItemsController {}
 *
 * // app-wide
 * @Module({ providers: [{ provide: APP_GUARD, useClass: RedlimitGuard }] })
 * export class AppModule {}
 *
 * // by API key instead of IP
 * @Injectable()
 * export class ApiKeyGuard extends RedlimitGuard {
 *   protected override getTracker(context: ExecutionContext): string {
 *     return String(context.switchToHttp().getRequest<Request>().headers['x-api-key'] ?? 'anonymous');
 *   }
 * }
 * ```
 */
@Injectable()
export class RedlimitGuard implements CanActivate {
  constructor(
    protected readonly registry: LimiterRegistry,
    protected readonly http: RedlimitHttp,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const throttle = this.throttleFor(context);
    if (!throttle || this.alreadyCharged(context) || (await this.shouldSkip(context))) return true;
    const limiter = this.registry.resolve(throttle.policy);
    const keys = throttle.key
      ? await throttle.key(context)
      : await this.generateKeys(context, await this.getTracker(context), limiter);
    const decision = await limiter.consume(keys, { cost: throttle.cost });
    const response = context.switchToHttp().getResponse<HttpResponseLike>();
    this.http.applyHeaders(response, decision, limiter.policy);
    if (decision.allowed) return true;
    return this.throwRefusal(context, decision);
  }

  /** Who the request is charged to by default: the client IP. */
  protected getTracker(context: ExecutionContext): string | Promise<string> {
    return this.http.clientIp(context.switchToHttp().getRequest<HttpRequestLike>());
  }

  /**
   * The caller keys of a request without a key function: method + route template + tracker, e.g.
   * `GET /items/:id|ip:203.0.113.7` (the handler's class and method name when the adapter has no
   * route template).
   */
  protected generateKeys(
    context: ExecutionContext,
    tracker: string,
    _limiter: Limiter,
  ): string | string[] | Promise<string | string[]> {
    const request = context.switchToHttp().getRequest<HttpRequestLike>();
    const route =
      routeTemplate(request) ?? `${context.getClass().name}.${context.getHandler().name}`;
    // HEAD is served by the GET handler on Express and Fastify: one route, one budget.
    const method = request.method === 'HEAD' ? 'GET' : (request.method ?? 'HTTP');
    return `${method} ${route}|ip:${tracker}`;
  }

  /** Whether to let a request through without spending. Default: never. */
  protected shouldSkip(_context: ExecutionContext): boolean | Promise<boolean> {
    return false;
  }

  /** Throws the refusal: 429 with `Retry-After`, or 503 when the store failed (fail mode closed). */
  protected throwRefusal(context: ExecutionContext, decision: Decision): never {
    throw this.http.refuse(context.switchToHttp().getResponse<HttpResponseLike>(), decision);
  }

  /**
   * True when this guard class already charged the request (e.g. it is both `APP_GUARD` and in
   * `@UseGuards`): a request is charged once per guard class.
   */
  private alreadyCharged(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<Record<symbol, Set<unknown> | undefined>>();
    const charged = (request[REQUEST_THROTTLED] ??= new Set());
    if (charged.has(this.constructor)) return true;
    charged.add(this.constructor);
    return false;
  }

  /** `@Throttle` of the handler, else of its controller, else the default policy; none if skipped. */
  protected throttleFor(context: ExecutionContext): ThrottleMetadata | undefined {
    const { throttle } = readRedlimitMetadata(context.getHandler(), context.getClass());
    if (throttle === false) return undefined;
    if (throttle) return throttle;
    const fallback = this.registry.defaultPolicy;
    return fallback === undefined ? undefined : { policy: fallback };
  }
}
