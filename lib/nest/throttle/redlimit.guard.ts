import { type CanActivate, type ExecutionContext, Injectable, Logger } from '@nestjs/common';
import type { Decision } from '../../core/decision';
import type { Limiter } from '../../core/limiter';
import { UNKNOWN_CLIENT } from '../../http/client-ip.util';
import { contextInputRefusal, contextRefusal } from '../contexts/context-refusal.util';
import { contextRoute, redlimitContextType } from '../contexts/execution-context.util';
import type { HttpResponseLike } from '../../http/http-request.util';
import {
  applySpentHeaders,
  chargedBefore,
  passUncharged,
  spentLayers,
  type Part,
  partsOf,
  spend,
  type TrackerKeys,
} from './guard-pipeline.util';
import { IdentityInputError } from '../../http/identity-input.error';
import { ipKey, routeKey } from '../../http/throttle-key.util';
import { holdLeases, leaseReleaseWarning } from '../leases/lease-release.util';
import { LimiterRegistry } from '../registry/limiter.registry';
import { recordHeaderLayers } from './rate-limit-layers.util';
import type { PolicyRef, ThrottleMetadata } from './redlimit.metadata';
import { RedlimitHttp } from '../contexts/redlimit-http.service';
import { type RequestView, requestView } from './request-view';
import { routePlan, type RoutePlans, routePlans } from './route-plan';

/**
 * Enforces `@Throttle` layers — the controller's, the handler's and the module's `defaultPolicy`,
 * spent as one atomic decision (see {@link Throttle}) — on HTTP routes, GraphQL resolvers,
 * WebSocket gateway handlers and microservice handlers. Over HTTP, allowed requests get rate-limit
 * headers, refused ones a 429 with `Retry-After`, a store failure under fail mode `closed` a 503.
 * A refused resolver throws a {@link RateLimitGraphQLError} (headers on the HTTP response when the
 * GraphQL context has one), a gateway handler a `WsException`, a microservice handler an
 * `RpcException` (see `contextRefusal`). Other context types pass through. Before anything
 * is resolved or charged, the module's `deny` list refuses a call (403, or the context's
 * `FORBIDDEN` error) and its `allow` list or `skipIf` lets one through uncharged and without
 * headers (see `RedlimitAccess`).
 *
 * Each call runs one pipeline: the handler's route plan (its layers, compiled once per handler),
 * the call's view (context type, request, response, client IP: resolved once), the keys of every
 * layer, one decision, then headers or the refusal.
 *
 * Subclass it to change who is tracked ({@link getTracker}), the keys ({@link generateKeys}),
 * skipping ({@link shouldSkip}), the layers ({@link throttlesFor}) or the refusal
 * ({@link throwRefusal}).
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
 * // by signed-in user instead of IP (for API keys: @Throttle(policy, { by: 'apiKey' }))
 * @Injectable()
 * export class UserGuard extends RedlimitGuard {
 *   protected override getTracker(context: ExecutionContext): string {
 *     return String(context.switchToHttp().getRequest<{ user?: { id: string } }>().user?.id ?? 'anonymous');
 *   }
 * }
 * ```
 */
@Injectable()
export class RedlimitGuard implements CanActivate {
  private readonly logger = new Logger('RedlimitGuard');
  /**
   * The hooks a subclass overrides (read on the first call, once its fields are set); the others
   * run on the call's view, without going through the context.
   */
  private overrides?: Readonly<Record<'layers' | 'tracker' | 'keys' | 'skip', boolean>>;
  /** The module's route plans. */
  private plans?: RoutePlans;

  constructor(
    /** The module's limiters: each `@Throttle` layer spends on the one of its policy. */
    protected readonly registry: LimiterRegistry,
    /** Client IP, rate-limit headers and refusals, as the module's options configure them. */
    protected readonly http: RedlimitHttp,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const view = requestView(context);
    if (view === undefined) return true;
    const overrides = (this.overrides ??= overriddenHooks(this));
    const plan = (this.plans ??= routePlans(this.registry)).of(view.handler, view.controller);
    const layers = overrides.layers
      ? this.throttlesFor(context).map((layer) => ({ layer }))
      : plan.layers;
    if (layers.length === 0 || chargedBefore(view, this.constructor)) return true;
    if (this.http.access.active) {
      // The module's deny/allow lists and skipIf, before any key is resolved or anything spent.
      const pending = this.http.access.verdictFor(view);
      const verdict = isPromiseLike(pending) ? await pending : pending;
      if (verdict !== undefined) {
        // Reported under every policy it would have been charged; @Attempt's too when denied
        // (its interceptor never runs then).
        const refs: Array<PolicyRef | undefined> = layers.map(({ layer }) => layer.policy);
        if (verdict === 'denied' && plan.attempt) refs.push(plan.attempt.metadata.policy);
        return passUncharged(this.http.access, this.registry, view, refs, verdict);
      }
    }
    if (overrides.skip) {
      const skip = this.shouldSkip(context);
      if (skip === true || (skip !== false && (await skip))) return true;
    }
    let parts: readonly Part[];
    try {
      const ready = partsOf(view, layers, this.registry, this.http, this.keysByTracker);
      parts = Array.isArray(ready) ? ready : await ready;
    } catch (error) {
      // A key function's contextField() refused the request's identity value: 400, not charged.
      if (error instanceof IdentityInputError) throw contextInputRefusal(context, error);
      throw error;
    }
    if (plan.attempt) view.shareClientIp(); // the @Attempt interceptor keys on it too
    const spent = await spend(parts);
    if (spent.allowed && spent.leases.length > 0) {
      // Held until the handler's work settled (LeaseReleaseInterceptor), never less because the
      // client left; see holdLeases.
      holdLeases(view.call, view.response, spent.leases, (error, decision) =>
        this.logger.warn(leaseReleaseWarning(decision, error)),
      );
    }
    if (view.response) applySpentHeaders(this.http, view.response, spent);
    if (!spent.allowed) return this.throwRefusal(context, spent.decision);
    // The @Attempt interceptor adds its decision to these layers' headers.
    if (plan.attempt) recordHeaderLayers(view, spentLayers(spent));
    return true;
  }

  /**
   * Who the call is charged to by default: the client IP — of the HTTP request (also the one
   * carrying a GraphQL operation), of the WebSocket connection, of the microservice's TCP peer;
   * `'unknown'` where the transport has no address at all (one budget per handler). An HTTP
   * request whose address cannot be read is refused with 400 ({@link RedlimitHttp.clientIp}).
   */
  protected getTracker(context: ExecutionContext): string | Promise<string> {
    return requestView(context)?.clientIp(this.http) ?? UNKNOWN_CLIENT;
  }

  /**
   * The caller keys of a call without a key function: the handler (controller class + method
   * name) + route template + tracker over HTTP, e.g. `ItemsController.get /items/:id|ip:203.0.113.7`
   * — one handler is one budget whatever the HTTP method (`@All`, HEAD on a GET route), and two
   * handlers on one path keep theirs; elsewhere the context type + the GraphQL `Type.field` or the
   * handler's `Class.method` + tracker: `graphql Mutation.signIn|ip:…`, `ws ChatGateway.send|ip:…`,
   * `rpc MathController.sum|ip:…`.
   */
  protected generateKeys(
    context: ExecutionContext,
    tracker: string,
    _limiter: Limiter,
  ): string | string[] | Promise<string | string[]> {
    const route = requestView(context)?.route ?? `${context.getType()} ${contextRoute(context)}`;
    return routeKey(route, ipKey(tracker));
  }

  /** Whether to let a request through without spending. Default: never. */
  protected shouldSkip(_context: ExecutionContext): boolean | Promise<boolean> {
    return false;
  }

  /**
   * Throws the refusal: over HTTP a 429 with `Retry-After`, or 503 when the store failed (fail
   * mode closed); elsewhere the context's error (`contextRefusal`).
   */
  protected throwRefusal(context: ExecutionContext, decision: Decision): never {
    if (redlimitContextType(context) !== 'http') throw contextRefusal(context, decision);
    throw this.http.refuse(context.getArgByIndex<HttpResponseLike>(1), decision);
  }

  /**
   * The layers that apply to the call: the controller's and the handler's `@Throttle`, plus the
   * module's default policy (unless a layer overrides or `@SkipThrottle()` says otherwise), as the
   * handler's route plan has them.
   */
  protected throttlesFor(context: ExecutionContext): readonly ThrottleMetadata[] {
    return routePlan(this.registry, context.getHandler(), context.getClass()).throttles;
  }

  /** The caller keys of one layer by the tracker ({@link getTracker}, {@link generateKeys}). */
  private readonly keysByTracker: TrackerKeys = (view, layer, limiter) => {
    if (!this.overrides!.tracker)
      return this.keysOf(view, layer, limiter, view.clientIp(this.http));
    const tracker = this.getTracker(view.context);
    if (!isPromiseLike(tracker)) return this.keysOf(view, layer, limiter, tracker);
    return Promise.resolve(tracker).then((t) => this.keysOf(view, layer, limiter, t));
  };

  private keysOf(view: RequestView, layer: ThrottleMetadata, limiter: Limiter, tracker: string) {
    if (layer.scope === 'app') return ipKey(tracker);
    if (this.overrides!.keys) return this.generateKeys(view.context, tracker, limiter);
    return routeKey(view.route, ipKey(tracker));
  }
}

/** Which of the guard's protected hooks a subclass overrides. */
function overriddenHooks(guard: RedlimitGuard) {
  const own = RedlimitGuard.prototype as unknown as Record<string, unknown>;
  const its = guard as unknown as Record<string, unknown>;
  const overrides = (name: string) => its[name] !== own[name];
  return {
    layers: overrides('throttlesFor'),
    tracker: overrides('getTracker'),
    keys: overrides('generateKeys'),
    skip: overrides('shouldSkip'),
  };
}

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}
