import type { ExecutionContext, Type } from '@nestjs/common';
import type { PolicyOptions } from '../../core/policy';
import { REDLIMIT_METADATA } from '../module/redlimit.constants';

/** Caller keys computed from a request: one key or several, charged as one decision. */
export type ThrottleKeyFn = (
  context: ExecutionContext,
) => string | readonly string[] | Promise<string | readonly string[]>;

/**
 * Chooses a policy per call, e.g. from the plan of the caller's API key: returns a registered
 * policy name (sync or async). An unknown name fails the call with a server error, never a pass.
 */
export type PolicyResolver = (context: ExecutionContext) => string | Promise<string>;

/**
 * A provider that chooses the policy per call and can use other services (a plan lookup with its
 * own cache, say): pass the class to `@Throttle`/`@Attempt` and list it in a module's providers.
 *
 * @example
 * @Injectable()
 * export class PlanPolicy implements PolicyResolverService {
 *   constructor(private readonly plans: PlansService) {}
 *   async resolvePolicy(ctx: ExecutionContext) {
 *     return `plan-${await this.plans.planOf(ctx.switchToHttp().getRequest().headers['x-api-key'])}`;
 *   }
 * }
 */
export interface PolicyResolverService {
  /** The registered policy name for this call. */
  resolvePolicy(context: ExecutionContext): string | Promise<string>;
}

/**
 * A decorator's policy: a registered name, an inline policy, a resolver function run per call, or
 * a {@link PolicyResolverService} provider class.
 */
export type PolicyRef = string | PolicyOptions | PolicyResolver | Type<PolicyResolverService>;

/**
 * Units a request is charged, computed per call from its context (e.g. the `max_tokens` an LLM
 * request asks for): a whole number from 1 to the policy's smallest limit, else the request is
 * refused as bad input (HTTP 400) before anything is charged.
 */
export type CostFn = (context: ExecutionContext) => number | Promise<number>;

/** Who a call is charged to by default: the client IP, or the API key (the IP without one). */
export type ThrottleTracker = 'ip' | 'apiKey';

/** What `@Throttle` records on a handler or controller. */
export interface ThrottleMetadata {
  /** A policy name, an inline policy (registered on first use), or a resolver run per call. */
  readonly policy: PolicyRef;
  /** Replaces the default key (handler + route template + tracker). */
  readonly key?: ThrottleKeyFn;
  /** Units charged per request, or a function of the call's context. Default 1. */
  readonly cost?: number | CostFn;
  /** Who is charged when there is no key function. Default `'ip'`. */
  readonly by?: ThrottleTracker;
  /**
   * `'route'` (default): one budget per route and caller; `'app'`: one budget per caller across
   * every route with this layer (e.g. a per-plan limit over the whole API).
   */
  readonly scope?: 'route' | 'app';
  /**
   * On a handler: this handler's layers replace the controller's and the default policy. On a
   * controller: the controller's layers (and its handlers') replace the default policy.
   */
  readonly override?: boolean;
}

/**
 * A request value `@Attempt` keys on: `'ip'`, `'user'`, `'apiKey'` (the API key header, or the
 * client IP without one), a field — bare (`'email'`: body, params and query over HTTP; refused
 * with 400 when they disagree) or with its source (`'body.email'`, `'query.email'`,
 * `'params.email'`, `'headers.x-user'`, `'body.user.email'`; `'args.…'` in GraphQL, `'data.…'`
 * in gateways and microservices) — a function, or an {@link AttemptPartSpec} with options.
 */
export type AttemptPart =
  'ip' | 'user' | 'apiKey' | (string & Record<never, never>) | AttemptPartFn | AttemptPartSpec;

/** A computed part of an `@Attempt` key; `undefined` or `''` counts as a missing value. */
export type AttemptPartFn = (
  context: ExecutionContext,
) => string | number | undefined | Promise<string | number | undefined>;

/**
 * A field or function part with options.
 *
 * @example
 * @Attempt([{ field: 'body.token', normalize: false }, 'ip'], { policy: 'otp' })
 * @Attempt({ field: 'body.user.login', name: 'email' }) // shares the 'email' budget of other routes
 */
export interface AttemptPartSpec {
  /** A field reference, as in a string part: `'body.email'`, `'email'`, `'headers.x-user'`. */
  readonly field?: string;
  /** Or a function of the context (exactly one of `field` and `value`). */
  readonly value?: AttemptPartFn;
  /**
   * Key name (`<name>:<hash>`). Default: the field's last segment (`'params.email'` → `email`),
   * or the function's name.
   */
  readonly name?: string;
  /**
   * `true` (default): Unicode-equivalent spellings share a budget — default-ignorable code points
   * removed, Unicode NFKC, lower-cased, trimmed. `false`: the value as sent (case-sensitive
   * tokens; an empty value still counts as missing).
   */
  readonly normalize?: boolean;
}

/** How a handler guarded by `@Attempt` ended; see {@link AttemptOptions.refundOn}. */
export type AttemptOutcome =
  | {
      /** The handler returned (its promise resolved, its observable completed). */
      readonly ok: true;
      /** What it returned: the value, or an observable's last value. */
      readonly result: unknown;
      /**
       * Over HTTP (not GraphQL), the response status as the handler left it: the one it set
       * (`@Res({ passthrough: true })`, `@HttpCode`) or the route's default. Absent elsewhere.
       */
      readonly status?: number;
    }
  | {
      /**
       * The handler threw, or its Observable was torn down before it settled (Nest does so when
       * the client goes away; an `async` handler runs to its end regardless).
       */
      readonly ok: false;
      /** What it threw (an `Error` named `AttemptCancelledError` when it was torn down). */
      readonly error: unknown;
    };

/** Options of `@Attempt(parts, options)`. */
export interface AttemptOptions {
  /** Policy name, inline policy or per-call resolver. Default: the module's `defaultPolicy`. */
  readonly policy?: PolicyRef;
  /**
   * Units charged on every key, or a function of the call's context (a reservation the handler
   * can settle with `attempt.adjust(actualCost)`). Default 1.
   */
  readonly cost?: number | CostFn;
  /**
   * When the spend is handed back besides an explicit `attempt.refund()`: `'success'` or a
   * predicate on the outcome. Default: only on `attempt.refund()`. `'success'` is: the handler
   * returned without throwing and, over HTTP, the status it left on the response (`status`) is
   * below 400 — a handler answering 401 through `@Res({ passthrough: true })` keeps the cost. In a
   * GraphQL resolver (errors are data, the status is always 200) and in gateway and microservice
   * handlers (no status), returning normally is success. A handler whose client left before it
   * finished, and whose Observable Nest tore down, is `{ ok: false }`: the cost is kept.
   */
  readonly refundOn?: 'success' | ((outcome: AttemptOutcome, context: ExecutionContext) => boolean);
  /**
   * Which budgets the rate-limit headers describe. `'requester'` (default): the attempt's budget
   * only when every part is the requester's own (`'ip'`, `'user'`, `'apiKey'`); with a part anyone
   * can name (an email, an account id), the headers show only the guard's layers, and a refusal
   * only `Retry-After`: else whoever names an account reads how often it failed. `'all'`: the
   * attempt's budget too (for budgets that are not secrets).
   */
  readonly headers?: 'requester' | 'all';
  /**
   * Trusted devices (the module's `devices` option): `true`, the login being the one part that is
   * not `'ip'`, `'apiKey'` or `'user'`, or the login part named as written (`'body.email'`). An
   * attempt refunded by a handler that succeeded gets a device token; one that carries a valid
   * token for the same login is charged to that device's budget instead of the login's, so
   * failures by others cannot lock the owner out. HTTP only (GraphQL over HTTP included);
   * elsewhere attempts are charged as without it.
   */
  readonly devices?: boolean | string;
}

/** What `@Attempt` records on a handler. */
export interface AttemptMetadata extends AttemptOptions {
  /** The request values keyed on, each its own key in one decision. */
  readonly parts: readonly AttemptPart[];
}

/**
 * Everything redlimit's decorators record on one handler or controller, under the single key
 * `REDLIMIT_METADATA`. `throttle: false` is `@SkipThrottle()`.
 */
export interface RedlimitMetadata {
  /** `@Throttle` layers of this target, top decorator first; `false` for `@SkipThrottle()`. */
  readonly throttle?: readonly ThrottleMetadata[] | false;
  /** `@Attempt` settings (handlers only). */
  readonly attempt?: AttemptMetadata;
}

/** The `@Throttle` layers that apply to one handler; see {@link readRedlimitMetadata}. */
export interface EffectiveRedlimitMetadata {
  /** Every layer that applies, controller's first; `false` when the handler is skipped. */
  readonly throttle?: readonly ThrottleMetadata[] | false;
  /**
   * True when the layers stand alone: a layer overrides, or the controller has
   * `@SkipThrottle()` and the handler its own `@Throttle`. The default policy is then not added.
   */
  readonly exclusive?: boolean;
  /** `@Attempt` settings of the handler. */
  readonly attempt?: AttemptMetadata;
}

/**
 * Bumped by every `defineRedlimitMetadata`: what {@link readRedlimitMetadata} merged before
 * may be stale.
 */
let metadataGeneration = 0;

/**
 * Merges fields into the redlimit metadata of a controller class or handler function.
 *
 * @example
 * defineRedlimitMetadata(SignInController.prototype.signIn, { throttle: false });
 */
export function defineRedlimitMetadata(target: object, patch: RedlimitMetadata): void {
  const current = Reflect.getOwnMetadata(REDLIMIT_METADATA, target) as RedlimitMetadata | undefined;
  Reflect.defineMetadata(REDLIMIT_METADATA, { ...current, ...patch }, target);
  metadataGeneration++;
}

/**
 * How many times redlimit metadata was written (by {@link defineRedlimitMetadata}): what was
 * compiled from it at an earlier generation may be stale.
 *
 * @internal
 */
export function redlimitMetadataGeneration(): number {
  return metadataGeneration;
}

/**
 * {@link readRedlimitMetadata}'s answers by handler, then controller class (a handler inherited by
 * two controllers has two), each with the generation it was read at.
 */
const effectiveByHandler = new WeakMap<
  object,
  WeakMap<object, { readonly generation: number; readonly effective: EffectiveRedlimitMetadata }>
>();

/**
 * The redlimit metadata that applies to a handler. `@Throttle` layers stack: the controller's and
 * the handler's all apply, as one decision (and the guard adds the module's default policy),
 * unless a handler layer has `override: true` (then only the handler's layers apply). A handler's
 * `@SkipThrottle()` skips everything; a controller's skips the controller's layers and the
 * default, leaving the handler's own. The result is frozen, and the same object until redlimit
 * metadata is written again: write it with `defineRedlimitMetadata` (as the decorators do),
 * never with `Reflect.defineMetadata`.
 *
 * @example
 * const { throttle } = readRedlimitMetadata(context.getHandler(), context.getClass());
 */
export function readRedlimitMetadata(
  handler: object,
  controller: object,
): EffectiveRedlimitMetadata {
  // Read on every guarded call: reflect-metadata's lookups walk both prototype chains, so the
  // merged answer is kept until the next write through defineRedlimitMetadata (the decorators').
  let byController = effectiveByHandler.get(handler);
  if (!byController) {
    byController = new WeakMap();
    effectiveByHandler.set(handler, byController);
  }
  const cached = byController.get(controller);
  if (cached?.generation === metadataGeneration) return cached.effective;
  const own = Reflect.getMetadata(REDLIMIT_METADATA, handler) as RedlimitMetadata | undefined;
  const inherited = Reflect.getMetadata(REDLIMIT_METADATA, controller) as
    RedlimitMetadata | undefined;
  const effective = Object.freeze(mergeRedlimitMetadata(own, inherited));
  byController.set(controller, { generation: metadataGeneration, effective });
  return effective;
}

function mergeRedlimitMetadata(
  own: RedlimitMetadata | undefined,
  inherited: RedlimitMetadata | undefined,
): EffectiveRedlimitMetadata {
  const attempt = own?.attempt !== undefined ? { attempt: own.attempt } : {};
  if (own?.throttle === false) return { throttle: false, ...attempt };
  const mine = own?.throttle ?? [];
  if (inherited?.throttle === false) {
    if (mine.length === 0) return { throttle: false, ...attempt };
    return { throttle: mine, exclusive: true, ...attempt };
  }
  if (mine.some((layer) => layer.override)) return { throttle: mine, exclusive: true, ...attempt };
  const theirs = inherited?.throttle ?? [];
  const layers = [...theirs, ...mine];
  // A controller layer that overrides drops the default policy for its handlers.
  const exclusive = theirs.some((layer) => layer.override);
  return {
    ...(layers.length > 0 && { throttle: layers }),
    ...(exclusive && { exclusive }),
    ...attempt,
  };
}
