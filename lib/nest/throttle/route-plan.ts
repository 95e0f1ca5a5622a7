import type { Limiter } from '../../core/limiter';
import { loginPartOf, REQUESTER_PARTS, resolveAttemptPart } from '../attempt/attempt-part.util';
import type { ResolvedAttemptPart } from '../attempt/attempt-part.util';
import type { LimiterRegistry } from '../registry/limiter.registry';
import {
  type AttemptMetadata,
  type EffectiveRedlimitMetadata,
  type PolicyRef,
  readRedlimitMetadata,
  redlimitMetadataGeneration,
  type ThrottleMetadata,
} from './redlimit.metadata';

/**
 * One `@Throttle` layer (or the module's default policy) as the guard spends it: the layer, and
 * its limiter when the policy is a name or an inline policy (resolvers run per call).
 */
export interface PlannedLayer {
  /** The layer as declared (or the default policy's, `{ policy, scope? }`). */
  readonly layer: ThrottleMetadata;
  /** The layer's limiter, known ahead; `undefined` for a resolver, or a name not registered yet. */
  readonly limiter?: Limiter;
}

/** A handler's `@Attempt`, compiled. */
export interface AttemptPlan {
  /** What `@Attempt` recorded. */
  readonly metadata: AttemptMetadata;
  /** Each part, checked and parsed ({@link resolveAttemptPart}). */
  readonly parts: readonly ResolvedAttemptPart[];
  /** The limiter of its policy when known ahead (a name, an inline policy, the default). */
  readonly limiter?: Limiter;
  /** Trusted devices: the index of the login part, or `undefined` without `devices`. */
  readonly loginPart?: number;
  /** Whether every part is the requester's own (`'ip'`, `'user'`, `'apiKey'`). */
  readonly requesterParts: boolean;
  /**
   * Whether the handler answers through `@Res()` / `@Next()` without passthrough (Nest's
   * library-specific mode: Nest sends nothing itself), so the outcome waits for the response.
   */
  readonly answersItself: boolean;
}

/**
 * Everything redlimit's decorators and the module's options say about one handler of one class,
 * compiled once into a frozen object: the guard's layers (the controller's and the handler's
 * `@Throttle`, the default policy unless a layer overrides or `@SkipThrottle()` says otherwise)
 * and the `@Attempt` with its parts. The guard and the interceptor look it up once per call and
 * read no metadata on the request path. Policy resolvers and cost and key functions stay
 * functions, run per call.
 */
export interface RoutePlan {
  /** The layers the guard spends, in order; empty when nothing is throttled. */
  readonly layers: readonly PlannedLayer[];
  /** The same layers as declared: what `RedlimitGuard.throttlesFor` returns. */
  readonly throttles: readonly ThrottleMetadata[];
  /** The handler's `@Attempt`, if any. */
  readonly attempt?: AttemptPlan;
  /** The metadata generation it was compiled at (a later decorator write recompiles it). */
  readonly generation: number;
}

/**
 * The route plans of one module (its registry: the default policy and the limiters are the
 * registry's), by handler, then class (a handler inherited by two controllers has two). A plan is
 * compiled on the handler's first call and kept until redlimit metadata is written again.
 */
export class RoutePlans {
  private readonly byHandler = new WeakMap<object, WeakMap<object, RoutePlan>>();

  constructor(private readonly registry: LimiterRegistry) {}

  /**
   * The plan of `handler` on `controller`.
   *
   * @example
   * const plan = plans.of(context.getHandler(), context.getClass());
   */
  of(handler: object, controller: object): RoutePlan {
    let byClass = this.byHandler.get(handler);
    if (byClass === undefined) this.byHandler.set(handler, (byClass = new WeakMap()));
    const known = byClass.get(controller);
    if (known !== undefined && known.generation === redlimitMetadataGeneration()) return known;
    const plan = compileRoutePlan(this.registry, handler, controller);
    byClass.set(controller, plan);
    return plan;
  }
}

/** Each registry's plans. */
const plansByRegistry = new WeakMap<LimiterRegistry, RoutePlans>();

/**
 * The route plans of a module's registry (one {@link RoutePlans} per registry).
 *
 * @example
 * this.plans ??= routePlans(this.registry);
 */
export function routePlans(registry: LimiterRegistry): RoutePlans {
  let plans = plansByRegistry.get(registry);
  if (plans === undefined) plansByRegistry.set(registry, (plans = new RoutePlans(registry)));
  return plans;
}

/**
 * The plan of a handler of a class under a module's registry ({@link RoutePlans.of}).
 *
 * @example
 * const plan = routePlan(registry, context.getHandler(), context.getClass());
 */
export function routePlan(
  registry: LimiterRegistry,
  handler: object,
  controller: object,
): RoutePlan {
  return routePlans(registry).of(handler, controller);
}

/**
 * Compiles the plan of a handler (see {@link RoutePlan}); {@link routePlan} keeps it.
 *
 * @example
 * const { layers, attempt } = compileRoutePlan(registry, handler, controller);
 */
export function compileRoutePlan(
  registry: LimiterRegistry,
  handler: object,
  controller: object,
): RoutePlan {
  const generation = redlimitMetadataGeneration();
  const metadata = readRedlimitMetadata(handler, controller);
  const throttles = Object.freeze(layersOf(metadata, registry));
  const layers = Object.freeze(
    throttles.map((layer) =>
      Object.freeze({ layer, limiter: knownLimiter(registry, layer.policy) }),
    ),
  );
  const attempt = metadata.attempt && attemptPlan(registry, metadata.attempt, handler, controller);
  return Object.freeze({ layers, throttles, ...(attempt && { attempt }), generation });
}

/**
 * The layers that apply: the controller's and the handler's `@Throttle`, plus the module's
 * default policy first (unless a layer overrides or `@SkipThrottle()` says otherwise).
 */
function layersOf(
  { throttle, exclusive }: EffectiveRedlimitMetadata,
  registry: LimiterRegistry,
): ThrottleMetadata[] {
  if (throttle === false) return [];
  const layers = throttle ?? [];
  const fallback = registry.defaultPolicy;
  if (exclusive || fallback === undefined) return [...layers];
  const scope = registry.defaultPolicyScope;
  return [{ policy: fallback, ...(scope === 'app' && { scope }) }, ...layers];
}

/**
 * The limiter of a policy that names it ahead of the call (a registered name, an inline policy,
 * `undefined` for the default); `undefined` for a resolver, or a policy that cannot be resolved
 * yet (then the call resolves it, and fails as it always did if it still cannot).
 */
function knownLimiter(
  registry: LimiterRegistry,
  policy: PolicyRef | undefined,
): Limiter | undefined {
  if (typeof policy === 'function') return undefined;
  if (typeof policy === 'string' && !registry.has(policy)) return undefined;
  try {
    return registry.resolve(policy);
  } catch {
    return undefined;
  }
}

function attemptPlan(
  registry: LimiterRegistry,
  metadata: AttemptMetadata,
  handler: object,
  controller: object,
): AttemptPlan {
  const { parts, devices } = metadata;
  const limiter = knownLimiter(registry, metadata.policy);
  const loginPart =
    devices === undefined || devices === false ? undefined : loginPartOf(parts, devices);
  return Object.freeze({
    metadata,
    parts: Object.freeze(parts.map((part, i) => resolveAttemptPart(part, i))),
    ...(limiter && { limiter }),
    ...(loginPart !== undefined && { loginPart }),
    requesterParts: parts.every((part) => REQUESTER_PARTS.has(part)),
    answersItself: answersItself(controller, (handler as { name: string }).name),
  });
}

/**
 * Nest's metadata keys of route parameters and of `@Res({ passthrough: true })` (on the class, by
 * handler name), and the parameter types that take the response.
 */
const ROUTE_ARGS_METADATA = '__routeArguments__';
const RESPONSE_PASSTHROUGH_METADATA = '__responsePassthrough__';
const RESPONSE_PARAM_TYPES: ReadonlySet<string> = new Set(['1', '2']); // RouteParamtypes RESPONSE, NEXT

/** Whether a handler answers through `@Res()` or `@Next()` without passthrough. */
function answersItself(controller: object, handler: string): boolean {
  const params = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, handler) ?? {}) as object;
  return (
    Reflect.getMetadata(RESPONSE_PASSTHROUGH_METADATA, controller, handler) !== true &&
    Object.keys(params).some((key) => RESPONSE_PARAM_TYPES.has(key.split(':')[0]!))
  );
}
