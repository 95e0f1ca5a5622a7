import { type HttpException, Inject, Injectable } from '@nestjs/common';
import type { Decision } from '../core/decision';
import type { ResolvedPolicy } from '../core/policy';
import { type ClientIpResolver, createClientIpResolver } from './client-ip.util';
import {
  type HttpRequestLike,
  type HttpResponseLike,
  peerAddress,
  setResponseHeader,
} from './http-request.util';
import { attemptKey } from './key-hash.util';
import { rateLimitHeaders, retryAfterSeconds } from './rate-limit-headers.util';
import { rateLimitHttpException } from './rate-limit.exception';
import { REDLIMIT_OPTIONS } from './redlimit.constants';
import type { RateLimitHeaderStyle, RedlimitModuleOptions } from './redlimit-options.interface';

/**
 * The HTTP side of a decision, shared by {@link RedlimitGuard} and {@link AttemptInterceptor}
 * (and usable from your own guards): who the client is, which headers a response carries, what
 * a refusal looks like. Works on Express and Fastify alike.
 *
 * @example
 * const decision = await registry.get('export').consume(`ip:${http.clientIp(request)}`);
 * http.applyHeaders(response, decision, registry.get('export').policy);
 * if (!decision.allowed) throw http.refuse(response, decision);
 */
@Injectable()
export class RedlimitHttp {
  /** The module's `headers` option. */
  readonly headerStyle: RateLimitHeaderStyle;
  private readonly resolveClientIp: ClientIpResolver;
  private readonly keySecret: string | undefined;

  constructor(@Inject(REDLIMIT_OPTIONS) options: RedlimitModuleOptions) {
    const style = options.headers ?? 'ietf';
    if (!['ietf', 'legacy', 'both', false].includes(style)) {
      throw new RangeError(
        `RedlimitModule headers must be 'ietf', 'legacy', 'both' or false; got ${JSON.stringify(style)}`,
      );
    }
    this.headerStyle = style;
    this.resolveClientIp = createClientIpResolver(options.clientIp);
    this.keySecret = options.keySecret;
  }

  /**
   * The client's IP: the peer address, or from `X-Forwarded-For` past trusted proxies; IPv6
   * grouped by the configured subnet.
   */
  clientIp(request: HttpRequestLike): string {
    return this.resolveClientIp(peerAddress(request), request.headers?.['x-forwarded-for']);
  }

  /** Sets the rate-limit headers of the decision (per the `headers` option) on a response. */
  applyHeaders(response: HttpResponseLike, decision: Decision, policy: ResolvedPolicy): void {
    for (const [name, value] of Object.entries(
      rateLimitHeaders(decision, policy, this.headerStyle),
    )) {
      setResponseHeader(response, name, value);
    }
  }

  /**
   * Sets `Retry-After` on the response and returns the exception to throw for a refused decision:
   * 503 when the store failed (fail mode closed), else 429 (also when the in-process fallback of
   * fail mode memory refused: that is a budget answer).
   */
  refuse(response: HttpResponseLike, decision: Decision): HttpException {
    setResponseHeader(response, 'Retry-After', String(retryAfterSeconds(decision.retryAfterMs)));
    return rateLimitHttpException(decision);
  }

  /** The caller key of an `@Attempt` part value, hashed with the module's `keySecret`. */
  attemptKey(name: string, value: string | undefined): string {
    return attemptKey(name, value, this.keySecret);
  }
}
