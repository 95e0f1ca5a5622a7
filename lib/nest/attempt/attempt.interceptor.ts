import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  Logger,
  type NestInterceptor,
  Optional,
} from '@nestjs/common';
import { Observable } from 'rxjs';
import type { Attempt } from '../../core/attempt';
import type { Decision } from '../../core/decision';
import type { ResolvedPolicy } from '../../core/policy';
import { RateLimitedError, StoreUnavailableError } from '../../core/errors';
import { runInAttemptScope, scopedAttempt } from './attempt-scope.util';
import { resolveAttemptPart, type ResolvedAttemptPart } from './attempt-part.util';
import { readContextField } from '../contexts/context-field.util';
import { contextInputRefusal, contextRefusal } from '../contexts/context-refusal.util';
import {
  contextUserId,
  type RedlimitContextType,
  redlimitContextType,
} from '../contexts/execution-context.util';
import type { HttpResponseLike } from '../../http/http-request.util';
import { nodeResponse } from '../leases/lease-release.util';
import { RequestView, requestView } from '../throttle/request-view';
import { type AttemptPlan, type RoutePlans, routePlans } from '../throttle/route-plan';
import { requestCost } from '../throttle/request-cost.util';
import { IdentityInputError } from '../../http/identity-input.error';
import { LimiterRegistry } from '../registry/limiter.registry';
import { policyNamesFor } from '../registry/policy-names.util';
import { recordedHeaderLayers, shownLayer } from '../throttle/rate-limit-layers.util';
import { REDLIMIT_LOGGER_CONTEXT, REQUEST_ATTEMPT } from '../module/redlimit.constants';
import {
  type AttemptMetadata,
  type AttemptOutcome,
  type AttemptPart,
} from '../throttle/redlimit.metadata';
import { RedlimitHttp } from '../contexts/redlimit-http.service';
import { unchargedAttempt } from './uncharged-attempt.util';
import { RedlimitDevices } from './redlimit-devices.service';
import { type DeviceSpend, spendWithDevice, trustDevice } from './device-spend.util';
import { AttemptCancelledError, responseEnd, settleAfter, withStatus } from './settle-after.util';

/**
 * Serves `@Attempt`: registered app-wide by `RedlimitModule`, it acts only on handlers with an
 * `@Attempt` parameter — HTTP routes, GraphQL resolvers, WebSocket gateway and microservice
 * handlers. It spends before the handler (refused → 429 or 503 over HTTP, else the context's error
 * of `contextRefusal`; the handler never runs), hands the `Attempt` to the parameter, and
 * settles once after the handler returns, throws or is cancelled: refund when the handler called
 * `attempt.refund()` or `refundOn` says so, keep the cost otherwise. A `concurrency` lease whose
 * handler's Observable is torn down before it settled (the client left) is not released: the
 * work behind it may go on, and the lease expires after its window. A settlement error is logged,
 * never sent to the client. A call the module's `deny` list names is refused before anything is
 * charged; one its `allow` list or `skipIf` lets through gets an attempt that charged nothing
 * (see `RedlimitAccess`).
 *
 * Subclass it to change key resolution ({@link resolvePart}), refunds ({@link shouldRefund}) or
 * refusals ({@link throwRefusal}), and pass the subclass as `attemptInterceptor` to `forRoot`.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class TenantAttemptInterceptor extends AttemptInterceptor {
 *   protected override async resolvePart(context: ExecutionContext, part: AttemptPart, index: number) {
 *     if (part === 'tenant') return `tenant:${context.switchToHttp().getRequest<Request>().headers['x-tenant']}`;
 *     return super.resolvePart(context, part, index);
 *   }
 * }
 * RedlimitModule.forRoot({ attemptInterceptor: TenantAttemptInterceptor, policies });
 * ```
 */
@Injectable()
export class AttemptInterceptor implements NestInterceptor {
  /** The Nest logger, under the `Redlimit` context; the default {@link onSettleError} warns on it. */
  protected readonly logger = new Logger(REDLIMIT_LOGGER_CONTEXT);
  /** The module's route plans. */
  private plans?: RoutePlans;

  constructor(
    /** The module's limiters: `@Attempt` spends on the one of its policy. */
    protected readonly registry: LimiterRegistry,
    /** Client IP, rate-limit headers and refusals, as the module's options configure them. */
    protected readonly http: RedlimitHttp,
    /**
     * Trusted devices (the module's `devices` option), for `@Attempt(…, { devices })`; a subclass
     * passes it on to `super()` to keep them working.
     */
    @Optional() protected readonly devices?: RedlimitDevices,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const view = requestView(context);
    if (view === undefined) return next.handle();
    this.plans ??= routePlans(this.registry);
    const plan = this.plans.of(view.handler, view.controller).attempt;
    if (!plan) return next.handle();
    const { metadata } = plan;
    const request = view.type === 'http' ? (view.call as Record<symbol, unknown>) : undefined;
    const begun = request ? request[REQUEST_ATTEMPT] : scopedAttempt(context.getArgs());
    if (begun !== undefined) return next.handle(); // a second interceptor
    if (this.http.access.active) {
      // The module's deny/allow lists and skipIf (the guard's verdict, if it asked first).
      const verdict = await this.http.access.verdictFor(view);
      if (verdict !== undefined) return this.passUncharged(view, next, metadata, verdict);
    }
    const response = view.response;
    const limiter = plan.limiter ?? (await this.registry.resolveFor(metadata.policy, context));
    let keys: string[];
    let cost: number | undefined;
    try {
      // Every part (and a computed cost) is read, and bad input refused, before anything is charged.
      keys = await this.keysOf(view, plan);
      cost = await requestCost(context, metadata.cost, limiter);
    } catch (error) {
      if (error instanceof IdentityInputError) throw contextInputRefusal(context, error);
      throw error;
    }
    let attempt: Attempt;
    let device: DeviceSpend | undefined;
    try {
      if (plan.loginPart === undefined) attempt = await limiter.begin(keys, { cost });
      else
        ({ attempt, device } = await spendWithDevice(
          this.devices,
          (error, decision) => this.onSettleError(error, decision),
          view,
          plan,
          limiter,
          keys,
          cost,
        ));
    } catch (error) {
      if (error instanceof RateLimitedError || error instanceof StoreUnavailableError) {
        if (response && disclosed(plan, keys)) {
          const policy = this.registry.has(error.decision.policy)
            ? this.registry.get(error.decision.policy).policy
            : limiter.policy;
          this.applyHeaders(view, response, error.decision, policy);
        }
        this.throwRefusal(context, error.decision);
      }
      throw error;
    }
    if (response && disclosed(plan, keys)) {
      this.applyHeaders(view, response, attempt.decision, limiter.policy);
    }
    // Over HTTP the parameter decorator reads the attempt from the request; elsewhere from the
    // async scope of the handler's call (an AsyncLocalStorage, which costs every promise after).
    let handled: Observable<unknown>;
    if (request) {
      request[REQUEST_ATTEMPT] = attempt;
      handled = next.handle();
    } else handled = runInAttemptScope(context.getArgs(), attempt, () => next.handle());
    // A handler that answers through @Res() itself may send its status (and keep streaming) after
    // it returned: its outcome, and its lease, wait for the response to end.
    const answering =
      view.type === 'http' && plan.answersItself ? nodeResponse(response) : undefined;
    return settleAfter(
      handled,
      (outcome) =>
        answering && outcome.ok
          ? responseEnd(answering).then((finished) =>
              this.settle(
                context,
                metadata,
                attempt,
                finished
                  ? withStatus(outcome, view.type, response)
                  : { ok: false, error: new AttemptCancelledError('request cancelled') },
                device,
                view,
              ),
            )
          : this.settle(
              context,
              metadata,
              attempt,
              withStatus(outcome, view.type, response),
              device,
              view,
            ),
      // Torn down before it settled (the client left): a lease is held to its window, since the
      // work behind the Observable (`from(promise)`) may go on unseen.
      attempt.leased,
    );
  }

  /**
   * A call the module's lists or `skipIf` decided, reported as a decision event of the policy:
   * denied → refused (403, or the context's `FORBIDDEN` error), the handler never runs; skipped
   * → the handler runs with an attempt that charged nothing ({@link unchargedAttempt}), and no
   * rate-limit headers are set.
   */
  private async passUncharged(
    view: RequestView,
    next: CallHandler,
    metadata: AttemptMetadata,
    verdict: 'denied' | 'skipped',
  ): Promise<Observable<unknown>> {
    const { context } = view;
    if (verdict === 'denied') {
      this.http.access.report(
        'denied',
        await policyNamesFor(this.registry, [metadata.policy], context),
      );
      throw this.http.access.refusal(context);
    }
    const limiter = await this.registry.resolveFor(metadata.policy, context);
    this.http.access.report('skipped', [limiter.policy.name]);
    const attempt = unchargedAttempt(limiter.policy);
    if (view.type === 'http') {
      (view.call as Record<symbol, unknown>)[REQUEST_ATTEMPT] = attempt;
      return next.handle();
    }
    return runInAttemptScope(context.getArgs(), attempt, () => next.handle());
  }

  /**
   * Every part's caller key, in order: by {@link resolvePart} when a subclass overrides it, else
   * from the route plan's parsed parts on the call's view.
   */
  private keysOf(view: RequestView, plan: AttemptPlan): Promise<string[]> {
    const { parts } = plan.metadata;
    if (this.resolvePart !== AttemptInterceptor.prototype.resolvePart) {
      return Promise.all(parts.map((part, i) => this.resolvePart(view.context, part, i)));
    }
    return Promise.all(plan.parts.map((part) => this.keyOf(view, part)));
  }

  /**
   * The caller key of one part: `ip:<hash>`, `user:<hash>`, `apiKey:<hash>` (the API key header;
   * the `ip` key without one), `<field>:<hash>` (named after the field's last segment, e.g.
   * `email` for `'params.email'`) or, for a function part, `<function name or "part<index>">:<hash>`.
   * Missing values map to `<name>:-`. Fields are read by `readContextField`, which refuses
   * non-scalar values and bare fields that disagree between sources with an
   * {@link IdentityInputError} (answered 400 before anything is charged); `'user'` comes from
   * `contextUserId`.
   */
  protected async resolvePart(
    context: ExecutionContext,
    part: AttemptPart,
    index: number,
  ): Promise<string> {
    // A context type redlimit does not know has no request: its parts read nothing.
    const view =
      requestView(context) ?? new RequestView(context, context.getType<RedlimitContextType>());
    const resolved = resolveAttemptPart(part, index); // a few string operations; checked at decoration
    return this.keyOf(view, resolved);
  }

  /** The caller key of one parsed part ({@link resolvePart}'s default). */
  private async keyOf(view: RequestView, resolved: ResolvedAttemptPart): Promise<string> {
    const { context } = view;
    switch (resolved.kind) {
      case 'ip':
        return this.http.attemptKey('ip', view.clientIp(this.http));
      case 'user':
        return this.http.attemptKey('user', contextUserId(context));
      case 'apiKey': {
        // The API key header, hashed; anonymous callers are charged by their IP instead.
        const request = view.request;
        const apiKey = request ? await this.http.apiKeyFor(request, context) : undefined;
        return apiKey ?? this.http.attemptKey('ip', view.clientIp(this.http));
      }
      case 'function': {
        const value: unknown = await resolved.fn(context);
        const text = partText(value, resolved.name);
        return this.http.attemptKey(resolved.name, text, { normalize: resolved.normalize });
      }
      case 'field': {
        const text = readContextField(context, resolved.field, {
          part: resolved.field.text,
          normalize: resolved.normalize,
        });
        return this.http.attemptKey(resolved.name, text, { normalize: resolved.normalize });
      }
    }
  }

  /**
   * Sets the attempt's rate-limit headers, added to those of the layers a guard already decided
   * for the call (the module's default policy, `@Throttle` layers): the IETF fields list every
   * layer, the legacy ones describe the refusing layer, else the one with the least left.
   */
  private applyHeaders(
    view: RequestView,
    response: HttpResponseLike,
    decision: Decision,
    policy: ResolvedPolicy,
  ): void {
    const earlier = recordedHeaderLayers(view);
    if (earlier.length === 0) {
      this.http.applyHeaders(response, decision, policy);
      return;
    }
    const layers = [...earlier, { decision, policy }];
    this.http.applyStackHeaders(response, layers, shownLayer(layers));
  }

  /**
   * Whether to refund besides an explicit `attempt.refund()`: per `refundOn`. `'success'`: the
   * handler returned and, over HTTP, left a status below 400 on the response.
   */
  protected shouldRefund(
    context: ExecutionContext,
    metadata: AttemptMetadata,
    outcome: AttemptOutcome,
  ): boolean {
    const { refundOn } = metadata;
    if (refundOn === 'success') return outcome.ok && (outcome.status ?? 0) < 400;
    return typeof refundOn === 'function' ? refundOn(outcome, context) : false;
  }

  /**
   * Throws the refusal: over HTTP a 429 with `Retry-After`, or 503 when the store failed (fail
   * mode closed); elsewhere the context's error (`contextRefusal`).
   */
  protected throwRefusal(context: ExecutionContext, decision: Decision): never {
    if (redlimitContextType(context) !== 'http') throw contextRefusal(context, decision);
    throw this.http.refuse(context.getArgByIndex<HttpResponseLike>(1), decision);
  }

  /** Reports a settlement that failed (the cost was kept). Default: a warning in the Nest log. */
  protected onSettleError(error: unknown, decision: Decision): void {
    const reason = error instanceof Error ? error.message : String(error);
    this.logger.warn(
      `Could not refund an attempt of policy '${decision.policy}'; the cost was kept (${reason})`,
    );
  }

  private async settle(
    context: ExecutionContext,
    metadata: AttemptMetadata,
    attempt: Attempt,
    outcome: AttemptOutcome,
    device: DeviceSpend | undefined,
    view: RequestView,
  ): Promise<void> {
    try {
      if (!attempt.settled && !attempt.refunded && this.shouldRefund(context, metadata, outcome)) {
        attempt.refund();
      }
      // Refunded by a handler that succeeded: the login was proved, and the client gets (or
      // renews) its device token. A refund for any other reason (a malformed request let off,
      // a handler that threw after refunding) proves nothing.
      const proved =
        attempt.refunded && outcome.ok && (outcome.status === undefined || outcome.status < 400);
      const trust =
        device !== undefined && proved ? trustDevice(this.devices, view, device) : undefined;
      await Promise.all([attempt.settle(), trust]);
    } catch (error) {
      this.onSettleError(error, attempt.decision);
    }
  }
}

/** A function part's value as key material: strings and finite numbers; anything else is a 400. */
function partText(value: unknown, name: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint') return value.toString();
  throw new IdentityInputError(name, 'not-scalar');
}

/**
 * Whether the rate-limit headers describe the attempt's budget: with `headers: 'all'`, or when
 * every part is the requester's own (else whoever names an account would read its failures) and
 * present (a missing user is `user:-`, one budget every signed-out caller shares).
 */
function disclosed(plan: AttemptPlan, keys: readonly string[]): boolean {
  return (
    plan.metadata.headers === 'all' ||
    (plan.requesterParts && keys.every((key) => !key.endsWith(':-')))
  );
}
