import type { ExecutionContext } from '@nestjs/common';
import type { DecisionEvent, DecisionEvents } from '../../core/events';
import { type AccessCaller, type AccessList, compileAccessList } from '../../http/access-list.util';
import { contextDenial } from '../contexts/context-refusal.util';
import type { HttpRequestLike } from '../../http/http-request.util';
import { requestView } from '../throttle/request-view';
import { REQUEST_ACCESS } from '../module/redlimit.constants';
import type { RedlimitModuleOptions } from '../../config/redlimit-options.interface';

/**
 * What the module's `deny`, `allow` and `skipIf` say of a call: `'denied'` (refused with 403
 * before anything is charged), `'skipped'` (let through uncharged), or `undefined` (limited as
 * usual).
 */
export type AccessVerdict = 'denied' | 'skipped' | undefined;

/** How a call is read: its client IP (ungrouped), its API key, its `User-Agent`. */
export interface AccessCallerSource {
  /** The client address by the module's `clientIp` rules, IPv6 not grouped; never throws. */
  clientAddress(request: HttpRequestLike): string | undefined;
  /** The raw API key from the module's API key header. */
  apiKeyValue(request: HttpRequestLike): string | undefined;
}

/**
 * A call as the verdict reads it ({@link RequestView} is one): its context, type, the object its
 * guards share (the HTTP request, else the argument list), and the HTTP request behind it.
 */
export interface AccessCall {
  readonly context: ExecutionContext;
  readonly type: string | undefined;
  readonly call: object;
  readonly request: HttpRequestLike | undefined;
}

/** Verdicts of calls outside HTTP, by the call's argument list (every guard sees the same). */
const verdictsByArgs = new WeakMap<object, AccessVerdict | Promise<AccessVerdict>>();

/**
 * The module's `allow` and `deny` lists and `skipIf`, applied by {@link RedlimitGuard} and the
 * `@Attempt` interceptor before they resolve keys or charge anything; reachable as
 * `RedlimitHttp.access`. Deny wins over allow, allow over `skipIf`. The verdict is taken once per
 * call (the guard and the interceptor share it), and reported as decision events with outcome
 * `denied` or `skipped`, operation `consume`, no keys (none were resolved) and latency 0.
 *
 * @throws TypeError at construction (module boot) naming what is wrong in `allow`, `deny` or
 *   `skipIf`
 * @example
 * const verdict = await http.access.verdict(context);
 * if (verdict === 'denied') {
 *   http.access.report('denied', ['login']);
 *   throw http.access.refusal(context);
 * }
 */
export class RedlimitAccess {
  /** Whether any of `allow`, `deny`, `skipIf` is configured (else every verdict is undefined). */
  readonly active: boolean;
  private readonly allow?: AccessList;
  private readonly deny?: AccessList;
  private readonly skipIf?: (context: ExecutionContext) => unknown;

  constructor(
    options: Pick<RedlimitModuleOptions, 'allow' | 'deny' | 'skipIf'>,
    private readonly caller: AccessCallerSource,
    private readonly events?: DecisionEvents,
  ) {
    this.allow = compileAccessList(options.allow, 'allow');
    this.deny = compileAccessList(options.deny, 'deny');
    const { skipIf } = options;
    if (skipIf !== undefined && typeof skipIf !== 'function') {
      throw new TypeError(
        'RedlimitModule skipIf must be a function (context) => boolean | Promise<boolean>; ' +
          `got ${typeof skipIf}`,
      );
    }
    this.skipIf = skipIf;
    this.active = this.allow !== undefined || this.deny !== undefined || skipIf !== undefined;
  }

  /**
   * The verdict for a call: `'denied'` when the `deny` list names the caller, else `'skipped'`
   * when the `allow` list does or `skipIf` returns true, else `undefined`. Synchronous unless
   * `skipIf` answers with a promise; asked once per call (an HTTP request, a resolver call, a
   * message), later calls return the first answer. A throwing `skipIf` fails the call.
   */
  verdict(context: ExecutionContext): AccessVerdict | Promise<AccessVerdict> {
    if (!this.active) return undefined;
    return this.verdictFor(
      requestView(context) ?? {
        context,
        type: undefined,
        call: context.getArgs(),
        request: undefined,
      },
    );
  }

  /**
   * {@link verdict} of a call already resolved into its view (the guard's and the interceptor's
   * `RequestView`).
   *
   * @internal
   */
  verdictFor(view: AccessCall): AccessVerdict | Promise<AccessVerdict> {
    if (!this.active) return undefined;
    if (view.type === 'http') {
      const request = view.call as Record<symbol, unknown>;
      if (REQUEST_ACCESS in request) return request[REQUEST_ACCESS] as AccessVerdict;
      const verdict = this.decide(view);
      request[REQUEST_ACCESS] = verdict;
      return verdict;
    }
    if (verdictsByArgs.has(view.call)) return verdictsByArgs.get(view.call);
    const verdict = this.decide(view);
    verdictsByArgs.set(view.call, verdict);
    return verdict;
  }

  /**
   * Reports a verdict as one decision event per policy the call would have charged (duplicates
   * once), with no key hashes.
   */
  report(outcome: 'denied' | 'skipped', policies: Iterable<string>): void {
    if (!this.events?.active) return;
    for (const policy of new Set(policies)) {
      const event: DecisionEvent = {
        operation: 'consume',
        policy,
        outcome,
        latencyMs: 0,
        keyHashes: Object.freeze([]),
      };
      this.events.emit(Object.freeze(event));
    }
  }

  /** The error that refuses a denied call in its context (see {@link contextDenial}). */
  refusal(context: ExecutionContext): Error {
    return contextDenial(context);
  }

  private decide(view: AccessCall): AccessVerdict | Promise<AccessVerdict> {
    const caller = this.callerOf(view);
    if (this.deny?.matches(caller)) return 'denied';
    if (this.allow?.matches(caller)) return 'skipped';
    if (!this.skipIf) return undefined;
    const skip = this.skipIf(view.context);
    if (isPromiseLike(skip)) return Promise.resolve(skip).then((s) => (s ? 'skipped' : undefined));
    return skip ? 'skipped' : undefined;
  }

  /** The request values the lists look at, and only those. */
  private callerOf(view: AccessCall): AccessCaller {
    const lists = [this.deny, this.allow];
    if (!lists.some((list) => list !== undefined)) return {};
    const request = view.request;
    if (!request) return {};
    const needs = (field: 'needsIp' | 'needsApiKey' | 'needsUserAgent') =>
      lists.some((list) => list?.[field] === true);
    const userAgent = needs('needsUserAgent') ? request.headers?.['user-agent'] : undefined;
    return {
      ...(needs('needsIp') && { ip: this.caller.clientAddress(request) }),
      ...(needs('needsApiKey') && { apiKey: this.caller.apiKeyValue(request) }),
      ...(typeof userAgent === 'string' && { userAgent }),
    };
  }
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}
