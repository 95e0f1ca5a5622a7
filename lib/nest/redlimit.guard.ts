import { type CanActivate, type ExecutionContext, Injectable, Logger } from '@nestjs/common';
import type { Decision } from '../core/decision';
import { Limiter } from '../core/limiter';
import { UNKNOWN_CLIENT } from './client-ip.util';
import { contextInputRefusal, contextRefusal } from './context-refusal.util';
import type { Keys } from '../core/keys.util';
import {
  contextRequest,
  contextResponse,
  contextRoute,
  redlimitContextType,
} from './execution-context.util';
import { type HttpRequestLike, type HttpResponseLike, routeTemplate } from './http-request.util';
import { IdentityInputError } from './identity-input.error';
import { requestCost } from './request-cost.util';
import { holdLeases, leaseReleaseWarning } from './lease-release.util';
import { LimiterRegistry } from './limiter.registry';
import { policyNamesFor } from './policy-names.util';
import { recordHeaderLayers } from './rate-limit-layers.util';
import { REQUEST_THROTTLED } from './redlimit.constants';
import {
  type EffectiveRedlimitMetadata,
  type PolicyRef,
  readRedlimitMetadata,
  type ThrottleMetadata,
} from './redlimit.metadata';
import { RedlimitHttp } from './redlimit-http.service';

/** Guard classes that charged a non-HTTP call, by the call's argument list. */
const chargedCalls = new WeakMap<object, Set<unknown>>();

/**
 * Enforces `@Throttle` layers — the controller's, the handler's and the module's `defaultPolicy`,
 * spent as one atomic decision (see {@link Throttle}) — on HTTP routes, GraphQL resolvers,
 * WebSocket gateway handlers and microservice handlers. Over HTTP, allowed requests get rate-limit headers, refused
 * ones a 429 with `Retry-After`, a store failure under fail mode `closed` a 503. A refused
 * resolver throws a {@link RateLimitGraphQLError} (headers on the HTTP response when the GraphQL
 * context has one), a gateway handler a `WsException`, a microservice handler an `RpcException`
 * (see `contextRefusal`). Other context types pass through. Before anything is resolved
 * or charged, the module's `deny` list refuses a call (403, or the context's `FORBIDDEN` error)
 * and its `allow` list or `skipIf` lets one through uncharged and without headers (see
 * `RedlimitAccess`).
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
  /** {@link throttlesFor}'s layers by the handler's merged metadata: built once per handler. */
  private readonly logger = new Logger('RedlimitGuard');
  private readonly layersByMetadata = new WeakMap<
    EffectiveRedlimitMetadata,
    readonly ThrottleMetadata[]
  >();

  constructor(
    /** The module's limiters: each `@Throttle` layer spends on the one of its policy. */
    protected readonly registry: LimiterRegistry,
    /** Client IP, rate-limit headers and refusals, as the module's options configure them. */
    protected readonly http: RedlimitHttp,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    // The context type and the HTTP request are read once here and handed on.
    const type = redlimitContextType(context);
    if (type === undefined) return true;
    const layers = this.throttlesFor(context);
    if (layers.length === 0) return true;
    const request = type === 'http' ? context.getArgByIndex<HttpRequestLike>(0) : undefined;
    if (this.alreadyCharged(context, request)) return true;
    if (this.http.access.active) {
      // The module's deny/allow lists and skipIf, before any key is resolved or anything spent.
      const pending = this.http.access.verdict(context);
      const verdict = isPromiseLike(pending) ? await pending : pending;
      if (verdict !== undefined) return this.passUncharged(context, layers, verdict);
    }
    const skip = this.shouldSkip(context);
    if (skip === true || (skip !== false && (await skip))) return true;
    let parts: readonly Part[];
    try {
      const ready = this.partsFor(context, layers, request);
      parts = Array.isArray(ready) ? ready : await ready;
    } catch (error) {
      // A key function's contextField() refused the request's identity value: 400, not charged.
      if (error instanceof IdentityInputError) throw contextInputRefusal(context, error);
      throw error;
    }
    const response =
      type === 'http' ? context.getArgByIndex<HttpResponseLike>(1) : contextResponse(context);
    let decision: Decision;
    const unique = parts.length === 1 ? parts : dedupe(parts);
    if (unique.length === 1) {
      const { limiter, keys, cost } = unique[0]!;
      decision = await limiter.consume(callerKeys(keys), { cost });
      if (decision.allowed && limiter.policy.algorithm === 'concurrency') {
        this.releaseLeases(context, response, [{ limiter, decision }]);
      }
      if (response) this.http.applyHeaders(response, decision, limiter.policy);
      if (decision.allowed && hasAttempt(context)) {
        recordHeaderLayers(context, [{ decision, policy: limiter.policy }]);
      }
    } else {
      const stacked = await Limiter.consumeAll(unique);
      if (stacked.allowed) {
        this.releaseLeases(
          context,
          response,
          stacked.decisions.map((d, i) => ({ limiter: unique[i]!.limiter, decision: d })),
        );
      }
      // The response describes the refusing layer, else the one with the least left.
      let shown = 0;
      stacked.decisions.forEach((d, i) => {
        const least = d.remaining < stacked.decisions[shown]!.remaining;
        if (stacked.refusedBy ? d === stacked.refusedBy : least) shown = i;
      });
      decision = stacked.decisions[shown]!;
      const layers = stacked.decisions.map((d, i) => ({
        decision: d,
        policy: unique[i]!.limiter.policy,
      }));
      if (response) this.http.applyStackHeaders(response, layers, shown);
      if (decision.allowed && hasAttempt(context)) recordHeaderLayers(context, layers);
    }
    if (decision.allowed) return true;
    return this.throwRefusal(context, decision);
  }

  /**
   * A call the module's lists or `skipIf` decided: reported as one decision event per policy it
   * would have been charged under, then refused (403 or the context's equivalent) or let through
   * without headers.
   */
  private async passUncharged(
    context: ExecutionContext,
    layers: readonly ThrottleMetadata[],
    verdict: 'denied' | 'skipped',
  ): Promise<true> {
    const refs: Array<PolicyRef | undefined> = layers.map((layer) => layer.policy);
    if (verdict === 'denied') {
      // @Attempt's interceptor never runs for a denied call: its policy is reported here.
      const { attempt } = readRedlimitMetadata(context.getHandler(), context.getClass());
      if (attempt) refs.push(attempt.policy);
    }
    const names = policyNamesFor(this.registry, refs, context);
    this.http.access.report(verdict, Array.isArray(names) ? names : await names);
    if (verdict === 'denied') throw this.http.access.refusal(context);
    return true;
  }

  /**
   * Every layer's limiter, keys and cost; synchronous unless a policy resolver, a key function or
   * a hook answers with a promise. Every layer is started even when an earlier one failed, as
   * `Promise.all` over async functions would.
   */
  private partsFor(
    context: ExecutionContext,
    layers: readonly ThrottleMetadata[],
    request: HttpRequestLike | undefined,
  ): Part[] | Promise<Part[]> {
    const parts: Array<Part | PromiseLike<Part>> = [];
    let pending = false;
    for (const layer of layers) {
      let part: Part | PromiseLike<Part>;
      try {
        part = this.partFor(context, layer, request);
      } catch (error) {
        part = rejected(error);
      }
      if (isPromiseLike(part)) pending = true;
      parts.push(part);
    }
    return pending ? Promise.all(parts.map((part) => Promise.resolve(part))) : (parts as Part[]);
  }

  private partFor(
    context: ExecutionContext,
    layer: ThrottleMetadata,
    request: HttpRequestLike | undefined,
  ): Part | PromiseLike<Part> {
    const { policy } = layer;
    if (typeof policy === 'function') {
      return this.registry
        .resolveFor(policy, context)
        .then((limiter) => this.partOf(context, layer, limiter, request));
    }
    return this.partOf(context, layer, this.registry.resolve(policy), request);
  }

  /**
   * `concurrency` layers hold a lease for the call until the handler's work has settled, never
   * less because the client left: `LeaseReleaseInterceptor`, which `RedlimitModule` gives every
   * handler that can lease, releases it when the handler's promise settles or its Observable
   * completes or errors, and over HTTP once the response is over too. An Observable torn down
   * before it settled (the client left) leaves it to its `window`. A handler without that
   * interceptor (layers only a subclass's {@link throttlesFor} adds) releases once the response
   * was sent in full; elsewhere, and when its client left, the lease runs to its `window`.
   */
  private releaseLeases(
    context: ExecutionContext,
    response: HttpResponseLike | undefined,
    leases: ReadonlyArray<{ limiter: Limiter; decision: Decision }>,
  ): void {
    holdLeases(context, response, leases, (error, decision) =>
      this.logger.warn(leaseReleaseWarning(decision, error)),
    );
  }

  private partOf(
    context: ExecutionContext,
    layer: ThrottleMetadata,
    limiter: Limiter,
    request: HttpRequestLike | undefined,
  ): Part | PromiseLike<Part> {
    const keys = this.keysFor(context, layer, limiter, request);
    const cost = requestCost(context, layer.cost, limiter);
    if (isPromiseLike(keys) || isPromiseLike(cost)) {
      return Promise.all([keys, cost]).then(([k, c]) => ({ limiter, keys: k, cost: c }));
    }
    return { limiter, keys, cost };
  }

  /** The caller keys of one layer: its key function's, else by tracker and scope. */
  private keysFor(
    context: ExecutionContext,
    layer: ThrottleMetadata,
    limiter: Limiter,
    request: HttpRequestLike | undefined,
  ): Keys | PromiseLike<Keys> {
    if (layer.key) return layer.key(context);
    if (layer.by === 'apiKey') {
      const from = request ?? contextRequest(context);
      if (from) {
        return this.http.apiKeyFor(from, context).then((apiKey) => {
          if (apiKey === undefined) return this.trackerKeys(context, layer, limiter);
          return layer.scope === 'app' ? apiKey : `${this.routeOf(context)}|${apiKey}`;
        });
      }
    }
    return this.trackerKeys(context, layer, limiter);
  }

  /** The caller keys of one layer by {@link getTracker}. */
  private trackerKeys(
    context: ExecutionContext,
    layer: ThrottleMetadata,
    limiter: Limiter,
  ): Keys | PromiseLike<Keys> {
    const tracker = this.getTracker(context);
    if (isPromiseLike(tracker)) {
      return Promise.resolve(tracker).then((t) => this.keysOfTracker(context, layer, limiter, t));
    }
    return this.keysOfTracker(context, layer, limiter, tracker);
  }

  private keysOfTracker(
    context: ExecutionContext,
    layer: ThrottleMetadata,
    limiter: Limiter,
    tracker: string,
  ): Keys | PromiseLike<Keys> {
    if (layer.scope === 'app') return `ip:${tracker}`;
    return this.generateKeys(context, tracker, limiter);
  }

  /**
   * Who the call is charged to by default: the client IP — of the HTTP request (also the one
   * carrying a GraphQL operation), of the WebSocket connection, of the microservice's TCP peer;
   * `'unknown'` where the transport has no address at all (one budget per handler). An HTTP
   * request whose address cannot be read is refused with 400 ({@link RedlimitHttp.clientIp}).
   */
  protected getTracker(context: ExecutionContext): string | Promise<string> {
    const request = contextRequest(context);
    return request ? this.http.clientIp(request) : UNKNOWN_CLIENT;
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
    return `${this.routeOf(context)}|ip:${tracker}`;
  }

  /**
   * What separates routes in default keys: `ItemsController.get /items/:id` over HTTP (the
   * handler, then the route template when the adapter names one), else `graphql Query.items`,
   * `ws ChatGateway.send`, `rpc MathController.sum`. Never the HTTP method: cycling methods on an
   * `@All` route must not multiply its limit.
   */
  private routeOf(context: ExecutionContext): string {
    const type = redlimitContextType(context);
    if (type !== 'http') return `${type ?? context.getType()} ${contextRoute(context)}`;
    const handler = `${context.getClass().name}.${context.getHandler().name}`;
    const template = routeTemplate(context.getArgByIndex<HttpRequestLike>(0));
    return template === undefined ? handler : `${handler} ${template}`;
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
   * True when this guard class already charged the call (e.g. it is both `APP_GUARD` and in
   * `@UseGuards`): an HTTP request, a resolver call, a message is charged once per guard class.
   */
  private alreadyCharged(context: ExecutionContext, request: HttpRequestLike | undefined): boolean {
    let charged: Set<unknown>;
    if (request !== undefined) {
      charged = (request as Record<symbol, Set<unknown> | undefined>)[REQUEST_THROTTLED] ??=
        new Set();
    } else {
      // Every guard of one call sees the same argument list; a GraphQL request runs many calls.
      const args = context.getArgs();
      charged = chargedCalls.get(args) ?? new Set();
      if (charged.size === 0) chargedCalls.set(args, charged); // new: a stored one is never empty
    }
    if (charged.has(this.constructor)) return true;
    charged.add(this.constructor);
    return false;
  }

  /**
   * The layers that apply to the call: the controller's and the handler's `@Throttle`, plus the
   * module's default policy (unless a layer overrides or `@SkipThrottle()` says otherwise).
   */
  protected throttlesFor(context: ExecutionContext): readonly ThrottleMetadata[] {
    const metadata = readRedlimitMetadata(context.getHandler(), context.getClass());
    let layers = this.layersByMetadata.get(metadata);
    if (!layers) {
      layers = Object.freeze(this.layersOf(metadata));
      this.layersByMetadata.set(metadata, layers);
    }
    return layers;
  }

  private layersOf({ throttle, exclusive }: EffectiveRedlimitMetadata): ThrottleMetadata[] {
    if (throttle === false) return [];
    const layers = throttle ?? [];
    const fallback = this.registry.defaultPolicy;
    if (exclusive || fallback === undefined) return [...layers];
    const scope = this.registry.defaultPolicyScope;
    return [{ policy: fallback, ...(scope === 'app' && { scope }) }, ...layers];
  }
}

/**
 * Whether the handler has an `@Attempt`, whose interceptor adds its decision to the headers the
 * guard's layers put on the response ({@link recordHeaderLayers}): only then are they recorded.
 */
function hasAttempt(context: ExecutionContext): boolean {
  return readRedlimitMetadata(context.getHandler(), context.getClass()).attempt !== undefined;
}

/** One layer ready to spend: its limiter, caller keys and cost. */
interface Part {
  readonly limiter: Limiter;
  readonly keys: Keys;
  readonly cost?: number;
}

/** A promise rejected with `error`, as an async function that threw it returns. */
function rejected(error: unknown): Promise<never> {
  // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- passed on as caught
  return Promise.reject(error);
}

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}

/**
 * A part's keys as the limiter takes them: a string or an array as they are (the limiter copies
 * and checks them), any other iterable as an array.
 */
function callerKeys(keys: Keys): Keys {
  return typeof keys === 'string' || Array.isArray(keys) ? keys : [...keys];
}

/**
 * Layers of the same policy become one part (a stack spends each policy on each key once): the
 * union of their keys, at the highest of their costs.
 */
function dedupe(
  parts: readonly Part[],
): Array<{ limiter: Limiter; keys: string[]; cost?: number }> {
  const byLimiter = new Map<Limiter, { limiter: Limiter; keys: string[]; cost?: number }>();
  for (const { limiter, keys, cost } of parts) {
    const list = typeof keys === 'string' ? [keys] : [...keys];
    const same = byLimiter.get(limiter);
    if (!same) {
      byLimiter.set(limiter, { limiter, keys: list, ...(cost !== undefined && { cost }) });
      continue;
    }
    for (const key of list) if (!same.keys.includes(key)) same.keys.push(key);
    if (cost !== undefined) same.cost = Math.max(same.cost ?? 1, cost);
  }
  return [...byLimiter.values()];
}
