import {
  type ExecutionContext,
  type HttpException,
  Inject,
  Injectable,
  Logger,
  Optional,
} from '@nestjs/common';
import type { Decision } from '../../core/decision';
import type { ResolvedPolicy } from '../../core/policy';
import { UNIX_SOCKET_PEER, wholePrivateRangeEntry } from '../../http/client-ip-header.util';
import {
  type ClientIpResolver,
  createClientIpResolver,
  isInternalAddress,
} from '../../http/client-ip.util';
import {
  type HttpRequestLike,
  type HttpResponseLike,
  peerAddress,
  setResponseHeader,
} from '../../http/http-request.util';
import { IdentityInputError } from '../../http/identity-input.error';
import { apiKeyHash, attemptKey, type AttemptKeyOptions } from '../../http/key-hash.util';
import {
  retryAfterSeconds,
  stackedRateLimitHeaders,
  writeRateLimitHeaders,
} from '../../http/rate-limit-headers.util';
import { rateLimitHttpException } from '../throttle/rate-limit.exception';
import { REDLIMIT_LOGGER_CONTEXT, REDLIMIT_OPTIONS } from '../module/redlimit.constants';
import { RedlimitAccess } from '../access/redlimit-access.service';
import { RedlimitEvents } from '../module/redlimit-events.service';
import type {
  RateLimitHeaderStyle,
  RedlimitModuleOptions,
} from '../../config/redlimit-options.interface';

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
  /**
   * The module's `allow` and `deny` lists and `skipIf`, as the guard and `@Attempt` apply them.
   * @internal
   */
  readonly access: RedlimitAccess;
  private readonly resolveClientIp: ClientIpResolver;
  /** Like {@link resolveClientIp}, IPv6 not grouped: for the `allow`/`deny` lists. */
  private resolveClientAddress?: ClientIpResolver;
  private readonly clientIpOptions: RedlimitModuleOptions['clientIp'];
  private readonly keySecret: string | undefined;
  private readonly apiKeyHeader: string;
  private readonly validateApiKey?: (key: string, context: ExecutionContext) => unknown;
  private readonly logger = new Logger(REDLIMIT_LOGGER_CONTEXT);
  /** Client-IP warnings already logged (each once per module). */
  private readonly warned = new Set<string>();

  constructor(
    @Inject(REDLIMIT_OPTIONS) options: RedlimitModuleOptions,
    @Optional() events?: RedlimitEvents,
  ) {
    const style = options.headers ?? 'ietf';
    if (!['ietf', 'legacy', 'both', false].includes(style)) {
      throw new RangeError(
        `RedlimitModule headers must be 'ietf', 'legacy', 'both' or false; got ${JSON.stringify(style)}`,
      );
    }
    this.headerStyle = style;
    this.resolveClientIp = createClientIpResolver(options.clientIp);
    this.clientIpOptions = options.clientIp;
    this.warnOfPrivateRange(options.clientIp);
    this.keySecret = options.keySecret;
    const header = options.apiKey?.header ?? 'x-api-key';
    if (typeof header !== 'string' || !/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(header)) {
      throw new TypeError(
        `RedlimitModule apiKey.header must be an HTTP header name; got ${JSON.stringify(header)}`,
      );
    }
    this.apiKeyHeader = header.toLowerCase();
    const validate = options.apiKey?.validate;
    if (validate !== undefined && typeof validate !== 'function') {
      throw new TypeError('RedlimitModule apiKey.validate must be a function (key, context)');
    }
    this.validateApiKey = validate;
    this.access = new RedlimitAccess(options, this, events);
  }

  /**
   * How this app turns identities into caller keys (its key secret, its IPv6 grouping), for the ops
   * board's look-up box, which finds a key from an email or an IP as the app would.
   *
   * @internal
   */
  keying(): {
    readonly keySecret?: string;
    readonly groupIp: (address: string) => string | undefined;
  } {
    return {
      ...(this.keySecret !== undefined && { keySecret: this.keySecret }),
      groupIp: (address) => this.resolveClientIp(address),
    };
  }

  /**
   * The caller's API key as a caller key, `apiKey:<hash>` (never the key itself), from the
   * configured header; `undefined` when the request carries none. Not validated: see
   * {@link apiKeyFor}.
   * @internal
   */
  apiKey(request: HttpRequestLike): string | undefined {
    const value = this.apiKeyValue(request);
    return value ? `apiKey:${apiKeyHash(value, this.keySecret)}` : undefined;
  }

  /**
   * The caller key of a call's API key, as {@link apiKey}, once the module's `apiKey.validate`
   * (when set) recognises it; `undefined` for none or an unrecognised one (the caller is then
   * charged by IP, so invented keys cannot mint fresh budgets).
   * @internal
   */
  async apiKeyFor(
    request: HttpRequestLike,
    context: ExecutionContext,
  ): Promise<string | undefined> {
    const value = this.apiKeyValue(request);
    if (!value) return undefined;
    if (this.validateApiKey && !(await this.validateApiKey(value, context))) return undefined;
    return `apiKey:${apiKeyHash(value, this.keySecret)}`;
  }

  /**
   * The API key the request carries in the configured header (`apiKey.header`, default
   * `x-api-key`), trimmed; `undefined` for none. The raw key: never store or log it.
   * @internal
   */
  apiKeyValue(request: HttpRequestLike): string | undefined {
    const raw = request.headers?.[this.apiKeyHeader];
    return (Array.isArray(raw) ? raw[0] : raw)?.trim() || undefined;
  }

  /**
   * The client's address by the same rules as {@link clientIp} (peer address, trusted proxies,
   * `clientIp.header`), but IPv6 not grouped, and `undefined` instead of a 400 when no client can
   * be named: what the `allow` and `deny` lists match.
   * @internal
   */
  clientAddress(request: HttpRequestLike): string | undefined {
    this.resolveClientAddress ??= createClientIpResolver({
      ...this.clientIpOptions,
      ipv6Subnet: 128,
    });
    return this.resolveClientAddress(
      peerAddress(request),
      request.headers?.[this.resolveClientAddress.header],
    );
  }

  /**
   * The client's IP: the peer address, or what a trusted proxy says in the configured header
   * (`clientIp.header`, default `X-Forwarded-For`); IPv6 grouped by the configured subnet.
   * Warns once when `X-Forwarded-For` or `Forwarded` arrives from a loopback or private peer
   * that is not a trusted proxy (almost always a proxy that was not configured).
   *
   * @throws IdentityInputError (`part` `'ip'`; the guard and the interceptor answer 400 before
   *   anything is charged) when the client cannot be named: the peer address cannot be read (the
   *   client reset the connection; a Unix socket unless `trustedProxies` names `'unix'`), the
   *   header does not parse, or a trusted proxy wrote no address (`unknown`, a malformed hop, no
   *   header over a trusted Unix socket). Such a request is never charged to one shared budget
   *   that one client could exhaust.
   */
  clientIp(request: HttpRequestLike): string {
    const peer = peerAddress(request);
    const headers = request.headers;
    const value = headers?.[this.resolveClientIp.header];
    const client = this.resolveClientIp(peer, value);
    if (peer !== undefined && peer !== UNIX_SOCKET_PEER && !this.warned.has('untrusted')) {
      // The header test first: the address tests cost more than the rest of this method.
      const sent =
        headers?.['x-forwarded-for'] !== undefined
          ? 'x-forwarded-for'
          : headers?.forwarded !== undefined
            ? 'forwarded'
            : undefined;
      if (sent !== undefined && isInternalAddress(peer) && !this.resolveClientIp.isTrusted(peer)) {
        this.warnOnce(
          'untrusted',
          `${HEADER_NAMES[sent]} arrived from ${peer}, which is not in clientIp.trustedProxies: ` +
            'clients are told apart by peer address, so if a proxy in front of this app sent it, ' +
            `every client behind that proxy shares one budget. Add the proxy's address (${peer}) ` +
            'to clientIp.trustedProxies, or ignore this if nothing should send it.',
        );
      }
    }
    if (client !== undefined) return client;
    const headerName = HEADER_NAMES[this.resolveClientIp.header];
    if (peer === undefined) {
      this.warnOnce(
        'no-peer',
        'A request arrived whose peer address could not be read (the client reset the connection?): ' +
          'it was refused with 400 instead of being charged to one shared budget.',
      );
    } else if (peer === UNIX_SOCKET_PEER && !this.resolveClientIp.isTrusted(peer)) {
      this.warnOnce(
        'unix-untrusted',
        'A request arrived over a Unix socket, which has no peer address: it was refused with 400 ' +
          'instead of being charged to one shared budget. If a proxy (nginx, …) forwards to this ' +
          `socket, add 'unix' to clientIp.trustedProxies so that its ${headerName} names the client.`,
      );
    } else if (peer === UNIX_SOCKET_PEER && value === undefined) {
      this.warnOnce(
        'unix-no-header',
        `A request arrived over the Unix socket ('unix' is in clientIp.trustedProxies) but the ` +
          `proxy sent no ${headerName}: it was refused with 400 instead of being charged to one ` +
          `shared budget. Make the proxy write ${headerName} (clientIp.header).`,
      );
    } else {
      const shown = JSON.stringify(
        (Array.isArray(value) ? value.join(', ') : String(value)).slice(0, 200),
      );
      const from = peer === UNIX_SOCKET_PEER ? 'on the Unix socket' : `(${peer})`;
      this.warnOnce(
        'no-client',
        `A trusted proxy ${from} sent ${headerName}: ${shown}, which names no client address: ` +
          'such requests are refused with 400 instead of being charged to one shared budget. ' +
          'Check what the proxy writes, and clientIp.header.',
      );
    }
    throw new IdentityInputError('ip', 'no-client-address');
  }

  /**
   * Warns once, under `NODE_ENV=production`, when `clientIp.trustedProxies` trusts a whole private
   * range and `clientIp.trustedHops` does not bound the walk: every client on that network (a
   * VPN, a peered VPC, another pod) is then a "proxy" that can name its own address.
   */
  private warnOfPrivateRange(options: RedlimitModuleOptions['clientIp']): void {
    if (process.env.NODE_ENV !== 'production' || options?.trustedHops !== undefined) return;
    const broad = wholePrivateRangeEntry(options?.trustedProxies ?? []);
    if (broad === undefined) return;
    const chained =
      (options?.header ?? 'x-forwarded-for') === 'x-forwarded-for' ||
      options?.header === 'forwarded';
    this.warnOnce(
      'private-range',
      `clientIp.trustedProxies entry '${broad.entry}' trusts a whole private range ` +
        `(${broad.range}) without clientIp.trustedHops: any client that holds an address there ` +
        '(a VPN or a peered VPC, another container or pod) is taken for a proxy and can name its ' +
        `own address in ${HEADER_NAMES[options?.header ?? 'x-forwarded-for']}, a fresh budget per ` +
        "request. List your proxies' own addresses" +
        (chained
          ? ', or set clientIp.trustedHops to the number of proxies in front of the app.'
          : ' (clientIp.trustedHops does not apply to a single-address header).'),
    );
  }

  private warnOnce(kind: string, message: string): void {
    if (this.warned.has(kind)) return;
    this.warned.add(kind);
    this.logger.warn(message);
  }

  /**
   * Sets the rate-limit headers of the decision (per the `headers` option) on a response, and
   * the soft-limit warning when the decision carries one (`RateLimit-Warning`, for a decision
   * with `warning: true`).
   */
  applyHeaders(response: HttpResponseLike, decision: Decision, policy: ResolvedPolicy): void {
    writeRateLimitHeaders(decision, policy, this.headerStyle, (name, value) =>
      setResponseHeader(response, name, value),
    );
    if (decision.warning) this.applyWarning(response, decision);
  }

  /**
   * Sets the rate-limit headers of a stacked decision: every layer in the IETF headers, the layer
   * at `shown` in the legacy ones (see `stackedRateLimitHeaders`); and the soft-limit
   * warning of the first layer past its threshold.
   * @internal
   */
  applyStackHeaders(
    response: HttpResponseLike,
    layers: ReadonlyArray<{ readonly decision: Decision; readonly policy: ResolvedPolicy }>,
    shown: number,
  ): void {
    for (const [name, value] of Object.entries(
      stackedRateLimitHeaders(layers, shown, this.headerStyle),
    )) {
      setResponseHeader(response, name, value);
    }
    const warned = layers.find(({ decision }) => decision.allowed && decision.warning);
    if (warned) this.applyWarning(response, warned.decision);
  }

  /**
   * Sets `RateLimit-Warning: "<policy>";q=<limit>;r=<remaining>` for a decision allowed past its
   * policy's soft limit (`warnAt`), unless the `headers` option is `false`.
   * @internal
   */
  applyWarning(response: HttpResponseLike, decision: Decision): void {
    if (this.headerStyle === false || !decision.warning) return;
    setResponseHeader(
      response,
      'RateLimit-Warning',
      `"${decision.policy}";q=${decision.limit};r=${decision.remaining}`,
    );
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

  /**
   * The caller key of an `@Attempt` part value, normalised (unless `normalize: false`) and hashed
   * with the module's `keySecret`; see {@link attemptKey}.
   */
  attemptKey(name: string, value: string | undefined, options?: AttemptKeyOptions): string {
    return attemptKey(name, value, this.keySecret, options);
  }
}

/** Header names as people write them, for messages. */
const HEADER_NAMES: Readonly<Record<string, string>> = {
  'x-forwarded-for': 'X-Forwarded-For',
  forwarded: 'Forwarded',
  'cf-connecting-ip': 'CF-Connecting-IP',
  'true-client-ip': 'True-Client-IP',
  'fly-client-ip': 'Fly-Client-IP',
  'x-real-ip': 'X-Real-IP',
};
