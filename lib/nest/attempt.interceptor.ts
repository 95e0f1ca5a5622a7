import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  Logger,
  type NestInterceptor,
  Optional,
} from '@nestjs/common';
import { Observable } from 'rxjs';
import type { Attempt } from '../core/attempt';
import { Limiter } from '../core/limiter';
import type { Decision } from '../core/decision';
import type { ResolvedPolicy } from '../core/policy';
import { RateLimitedError, StoreUnavailableError } from '../core/errors';
import { runInAttemptScope, scopedAttempt } from './attempt-scope.util';
import { loginPartOf, resolveAttemptPart } from './attempt-part.util';
import { UNKNOWN_CLIENT } from './client-ip.util';
import { readContextField } from './context-field.util';
import { contextInputRefusal, contextRefusal } from './context-refusal.util';
import {
  contextRequest,
  contextResponse,
  contextUserId,
  type RedlimitContextType,
  redlimitContextType,
} from './execution-context.util';
import type { HttpResponseLike } from './http-request.util';
import { type ClosableResponse as NodeResponse, nodeResponse } from './lease-release.util';
import { requestCost } from './request-cost.util';
import { IdentityInputError } from './identity-input.error';
import { LimiterRegistry } from './limiter.registry';
import { policyNamesFor } from './policy-names.util';
import { recordedHeaderLayers, shownLayer } from './rate-limit-layers.util';
import { REDLIMIT_LOGGER_CONTEXT, REQUEST_ATTEMPT } from './redlimit.constants';
import {
  type AttemptMetadata,
  type AttemptOutcome,
  type AttemptPart,
  readRedlimitMetadata,
} from './redlimit.metadata';
import { RedlimitHttp } from './redlimit-http.service';
import { unchargedAttempt } from './uncharged-attempt.util';
import { RedlimitDevices, type TrustedDevice } from './redlimit-devices.service';
import type { EpochReading } from '../core/store';
import { MISSING_VALUE } from './key-hash.util';

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
    const type = redlimitContextType(context);
    if (type === undefined) return next.handle();
    const { attempt: metadata } = readRedlimitMetadata(context.getHandler(), context.getClass());
    if (!metadata) return next.handle();
    const request = type === 'http' ? context.getArgByIndex<Record<symbol, unknown>>(0) : undefined;
    const begun = request ? request[REQUEST_ATTEMPT] : scopedAttempt(context.getArgs());
    if (begun !== undefined) return next.handle(); // a second interceptor
    if (this.http.access.active) {
      // The module's deny/allow lists and skipIf (the guard's verdict, if it asked first).
      const verdict = await this.http.access.verdict(context);
      if (verdict !== undefined) return this.passUncharged(context, next, metadata, verdict);
    }
    const response = contextResponse(context);
    const limiter = await this.registry.resolveFor(metadata.policy, context);
    let keys: string[];
    let cost: number | undefined;
    try {
      // Every part (and a computed cost) is read, and bad input refused, before anything is charged.
      keys = await Promise.all(metadata.parts.map((part, i) => this.resolvePart(context, part, i)));
      cost = await requestCost(context, metadata.cost, limiter);
    } catch (error) {
      if (error instanceof IdentityInputError) throw contextInputRefusal(context, error);
      throw error;
    }
    let attempt: Attempt;
    let device: DeviceSpend | undefined;
    try {
      if (metadata.devices === undefined || metadata.devices === false) {
        attempt = await limiter.begin(keys, { cost });
      } else
        ({ attempt, device } = await this.spendWithDevice(context, metadata, limiter, keys, cost));
    } catch (error) {
      if (error instanceof RateLimitedError || error instanceof StoreUnavailableError) {
        if (response && disclosed(metadata, keys)) {
          const policy = this.registry.has(error.decision.policy)
            ? this.registry.get(error.decision.policy).policy
            : limiter.policy;
          this.applyHeaders(context, response, error.decision, policy);
        }
        this.throwRefusal(context, error.decision);
      }
      throw error;
    }
    if (response && disclosed(metadata, keys)) {
      this.applyHeaders(context, response, attempt.decision, limiter.policy);
    }
    if (request) request[REQUEST_ATTEMPT] = attempt;
    const handled = runInAttemptScope(context.getArgs(), attempt, () => next.handle());
    // A handler that answers through @Res() itself may send its status (and keep streaming) after
    // it returned: its outcome, and its lease, wait for the response to end.
    const answering = type === 'http' ? answeringResponse(context, response) : undefined;
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
                  ? withStatus(outcome, type, response)
                  : { ok: false, error: new AttemptCancelledError('request cancelled') },
                device,
              ),
            )
          : this.settle(context, metadata, attempt, withStatus(outcome, type, response), device),
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
    context: ExecutionContext,
    next: CallHandler,
    metadata: AttemptMetadata,
    verdict: 'denied' | 'skipped',
  ): Promise<Observable<unknown>> {
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
    if (redlimitContextType(context) === 'http') {
      context.getArgByIndex<Record<symbol, unknown>>(0)[REQUEST_ATTEMPT] = attempt;
    }
    return runInAttemptScope(context.getArgs(), attempt, () => next.handle());
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
    const resolved = resolveAttemptPart(part, index); // a few string operations; checked at decoration
    switch (resolved.kind) {
      case 'ip':
        return this.http.attemptKey('ip', this.clientIpOf(context));
      case 'user':
        return this.http.attemptKey('user', contextUserId(context));
      case 'apiKey': {
        // The API key header, hashed; anonymous callers are charged by their IP instead.
        const request = contextRequest(context);
        const apiKey = request ? await this.http.apiKeyFor(request, context) : undefined;
        return apiKey ?? this.http.attemptKey('ip', this.clientIpOf(context));
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
    context: ExecutionContext,
    response: HttpResponseLike,
    decision: Decision,
    policy: ResolvedPolicy,
  ): void {
    const earlier = recordedHeaderLayers(context);
    if (earlier.length === 0) {
      this.http.applyHeaders(response, decision, policy);
      return;
    }
    const layers = [...earlier, { decision, policy }];
    this.http.applyStackHeaders(response, layers, shownLayer(layers));
  }

  /** The client IP, or `'unknown'` on a transport without addresses (one budget per handler). */
  private clientIpOf(context: ExecutionContext): string {
    const request = contextRequest(context);
    return request ? this.http.clientIp(request) : UNKNOWN_CLIENT;
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
    device?: DeviceSpend,
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
      const trust = device !== undefined && proved ? this.trustDevice(context, device) : undefined;
      await Promise.all([attempt.settle(), trust]);
    } catch (error) {
      this.onSettleError(error, attempt.decision);
    }
  }

  /**
   * Spends an `@Attempt(…, { devices })` call. With a token signed for the login, the login
   * part's key is replaced by the device's and the device's lifetime failure count is charged
   * beside, in one decision, while the login's device epoch and the store's clock are read (one
   * more command in the same round trip on a pipelining client). The device is trusted if the
   * token is unexpired on that clock and at that epoch; else what it spent goes back and the call
   * is charged as any other, as it is without a token or with a bad one (no different answer,
   * whatever was wrong).
   */
  private async spendWithDevice(
    context: ExecutionContext,
    metadata: AttemptMetadata,
    limiter: Limiter,
    keys: string[],
    cost: number | undefined,
  ): Promise<{ attempt: Attempt; device?: DeviceSpend }> {
    const devices = this.devices;
    if (devices === undefined || !devices.enabled) {
      throw new Error(
        `@Attempt(…, { devices: ${JSON.stringify(metadata.devices)} }) needs RedlimitModule's devices option` +
          (devices === undefined
            ? ' (and a custom attemptInterceptor must pass RedlimitDevices to super())'
            : ''),
      );
    }
    const request = contextRequest(context);
    if (request === undefined) return { attempt: await limiter.begin(keys, { cost }) };
    const index = loginPartOf(metadata.parts, metadata.devices as true | string);
    const partKey = keys[index]!;
    const loginKey = devices.loginKeyOf(partKey);
    const policy = limiter.policy.name;
    const trusted = devices.recognise(request, partKey, policy);
    if (trusted !== undefined) {
      const deviceKeys = keys.map((key, i) => (i === index ? trusted.key : key));
      const [reading, spent] = await Promise.all([
        devices.epochOf(loginKey).catch(() => undefined),
        Limiter.beginAll([
          { limiter, keys: deviceKeys, ...(cost !== undefined && { cost }) },
          { limiter: devices.lifeLimiter(limiter), keys: trusted.key },
        ]).then(
          (attempt) => ({ attempt }),
          (error: unknown) => ({ error }),
        ),
      ]);
      // The store failed and a fail mode decided (failMode 'memory' counting in process): the
      // epoch cannot be read, so a signed token unexpired on this process's clock is trusted
      // (revocations unseen until the store is back), or the attacker, counted in the fallback
      // too, would keep the owner out for the length of the outage.
      const decided = 'attempt' in spent ? spent.attempt.decision : decisionOf(spent.error);
      const outage = reading === undefined && decided?.failure !== undefined;
      if (
        outage ? devices.liveNow(trusted) : reading !== undefined && devices.live(trusted, reading)
      ) {
        if ('error' in spent) throw spent.error;
        return { attempt: spent.attempt, device: { loginKey, policy, trusted, reading } };
      }
      // Expired, revoked, or the epoch could not be read: not trusted; what it spent goes back.
      if ('attempt' in spent) {
        spent.attempt.refund();
        await spent.attempt.settle().catch((error: unknown) => {
          this.onSettleError(error, spent.attempt.decision);
        });
      }
    }
    return { attempt: await limiter.begin(keys, { cost }), device: { loginKey, policy } };
  }

  /**
   * Sets the device token on the response of a successful attempt: the presented device's,
   * renewed, or a new device's. Skipped when the response is already sent (a handler answering
   * through `@Res()`: call `RedlimitDevices.trust` there) or the login part was missing.
   */
  private async trustDevice(context: ExecutionContext, device: DeviceSpend): Promise<void> {
    const devices = this.devices;
    const response = contextResponse(context);
    if (devices === undefined || response === undefined || responseSent(response)) return;
    if (device.loginKey === MISSING_VALUE) return;
    const reading = device.reading ?? (await devices.epochOf(device.loginKey));
    const token = devices.tokenFor(device.loginKey, device.policy, device.trusted?.nonce, reading);
    if (!responseSent(response)) devices.setCookie(response, token, device.policy, device.loginKey);
  }
}

/**
 * The login of an `@Attempt(…, { devices })` call, and, when trusted, the device it was charged
 * to and the epoch reading that trusted it.
 */
interface DeviceSpend {
  readonly loginKey: string;
  /** The sign-in policy the device is (or will be) trusted for. */
  readonly policy: string;
  readonly trusted?: TrustedDevice;
  readonly reading?: EpochReading;
}

/** The decision a refusal carries, if `error` is one. */
function decisionOf(error: unknown): Decision | undefined {
  return error instanceof RateLimitedError || error instanceof StoreUnavailableError
    ? error.decision
    : undefined;
}

/** Whether the response's headers are gone (Express/Node `headersSent`, Fastify `sent`). */
function responseSent(response: HttpResponseLike): boolean {
  const target = response as { headersSent?: unknown; sent?: unknown };
  return target.headersSent === true || target.sent === true;
}

/** Raised into `refundOn` when the client went away before the handler finished. */
class AttemptCancelledError extends Error {
  override readonly name = 'AttemptCancelledError';
}

/**
 * Mirrors `source`, running `settle` exactly once when it completes, errors or is unsubscribed
 * before that (then with an `AttemptCancelledError`, unless `holdOnTeardown`: then never, and an
 * attempt's lease expires after its window); completion and errors are passed on only after
 * `settle` finished, so the response leaves with the refund applied. Should `settle` reject
 * anyway (a throwing hook in a subclass), the response still goes out: a settlement problem is
 * never the client's.
 */
function settleAfter<T>(
  source: Observable<T>,
  settle: (outcome: AttemptOutcome) => Promise<void>,
  holdOnTeardown: boolean,
): Observable<T> {
  return new Observable<T>((subscriber) => {
    let finished = false;
    let last: T | undefined;
    const finish = (outcome: AttemptOutcome): Promise<void> => {
      finished = true;
      return settle(outcome).catch(() => undefined);
    };
    const subscription = source.subscribe({
      next: (value) => {
        last = value;
        subscriber.next(value);
      },
      error: (error: unknown) => {
        void finish({ ok: false, error }).then(() => subscriber.error(error));
      },
      complete: () => {
        void finish({ ok: true, result: last }).then(() => subscriber.complete());
      },
    });
    return () => {
      subscription.unsubscribe();
      if (!finished && !holdOnTeardown) {
        void finish({ ok: false, error: new AttemptCancelledError('request cancelled') });
      }
    };
  });
}

/**
 * The outcome with, over HTTP, the status the handler left on the response (Express's
 * `res.statusCode`, Fastify's `reply.statusCode`): a failure the handler reports by its status
 * is not a success. GraphQL (errors as data), gateways and microservices have none.
 */
function withStatus(
  outcome: AttemptOutcome,
  type: RedlimitContextType,
  response: HttpResponseLike | undefined,
): AttemptOutcome {
  if (!outcome.ok || type !== 'http') return outcome;
  const status = (response as { statusCode?: unknown } | undefined)?.statusCode;
  return typeof status === 'number' ? { ...outcome, status } : outcome;
}

/** A function part's value as key material: strings and finite numbers; anything else is a 400. */
function partText(value: unknown, name: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint') return value.toString();
  throw new IdentityInputError(name, 'not-scalar');
}

/** Parts whose budget is the requester's own: anyone else naming it names another budget. */
const REQUESTER_PARTS: ReadonlySet<unknown> = new Set(['ip', 'user', 'apiKey']);

/**
 * Whether the rate-limit headers describe the attempt's budget: with `headers: 'all'`, or when
 * every part is the requester's own (else whoever names an account would read its failures) and
 * present (a missing user is `user:-`, one budget every signed-out caller shares).
 */
function disclosed(metadata: AttemptMetadata, keys: readonly string[]): boolean {
  return (
    metadata.headers === 'all' ||
    metadata.parts.every((part, i) => REQUESTER_PARTS.has(part) && !keys[i]!.endsWith(':-'))
  );
}

/**
 * Nest's metadata keys of route parameters and of `@Res({ passthrough: true })` (on the class, by
 * handler name), and the parameter types that take the response.
 */
const ROUTE_ARGS_METADATA = '__routeArguments__';
const RESPONSE_PASSTHROUGH_METADATA = '__responsePassthrough__';
const RESPONSE_PARAM_TYPES: ReadonlySet<string> = new Set(['1', '2']); // RouteParamtypes RESPONSE, NEXT

/** Handlers that answer through `@Res()` / `@Next()` themselves (no passthrough), by class. */
const answersItself = new WeakMap<object, Map<string, boolean>>();

/**
 * The Node response of a handler that answers through `@Res()` or `@Next()` without passthrough
 * (Nest's library-specific mode: Nest sends nothing itself), or undefined. Read once per handler.
 */
function answeringResponse(
  context: ExecutionContext,
  response: HttpResponseLike | undefined,
): NodeResponse | undefined {
  const controller = context.getClass();
  const handler = context.getHandler().name;
  let byHandler = answersItself.get(controller);
  if (byHandler === undefined)
    answersItself.set(controller, (byHandler = new Map<string, boolean>()));
  let answers = byHandler.get(handler);
  if (answers === undefined) {
    const params = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, handler) ?? {}) as object;
    answers =
      Reflect.getMetadata(RESPONSE_PASSTHROUGH_METADATA, controller, handler) !== true &&
      Object.keys(params).some((key) => RESPONSE_PARAM_TYPES.has(key.split(':')[0]!));
    byHandler.set(handler, answers);
  }
  return answers ? nodeResponse(response) : undefined;
}

/** A Node response's end: true once sent in full, false when the connection closed before. */
function responseEnd(response: NodeResponse): Promise<boolean> {
  if (response.writableFinished) return Promise.resolve(true);
  if (response.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    response.once('close', () => resolve(response.writableFinished === true));
  });
}
