import type { ExecutionContext } from '@nestjs/common';
import { UNKNOWN_CLIENT } from '../../http/client-ip.util';
import { routeName } from '../../http/throttle-key.util';
import {
  contextRequest,
  contextResponse,
  contextRoute,
  type RedlimitContextType,
  redlimitContextType,
} from '../contexts/execution-context.util';
import {
  type HttpRequestLike,
  type HttpResponseLike,
  routeTemplate,
} from '../../http/http-request.util';

/** Where an HTTP request keeps its client IP once computed, with the resolver that computed it. */
const REQUEST_CLIENT_IP = Symbol('redlimit:client-ip');

/** A request with a shared client IP. */
type Shared = { [REQUEST_CLIENT_IP]?: { readonly source: ClientIpSource; readonly ip: string } };

/** What computes a client IP: `RedlimitHttp` (its `clientIp` may throw a 400). */
export interface ClientIpSource {
  clientIp(request: HttpRequestLike): string;
}

/**
 * One handler call as redlimit's guard and `@Attempt` interceptor read it, resolved once per call:
 * the context type, the handler and its class, the request and the response (HTTP routes read
 * both at once; other contexts on first use), and, lazily, the client IP (computed at most once
 * per HTTP request, shared by the guard and the interceptor through the request) and the route
 * name of default keys. Every step of the guard's pipeline takes this view instead of deriving
 * them from the `ExecutionContext` again.
 */
export class RequestView {
  /** The handler (route method, resolver, gateway or microservice handler). */
  readonly handler: object;
  /** Its controller, resolver, gateway class. */
  readonly controller: object;
  /** What the guards and interceptors of one call share: the HTTP request, else the arguments. */
  readonly call: object;
  private requestRead: boolean;
  private requestOf: HttpRequestLike | undefined;
  private responseRead: boolean;
  private responseOf: HttpResponseLike | undefined;
  private routeOf: string | undefined;
  /** The client IP once computed, and the source that computed it. */
  private ip: string | undefined;
  private ipSource: ClientIpSource | undefined;

  constructor(
    /** The Nest context the view was made from: what the protected hooks take. */
    readonly context: ExecutionContext,
    /** The kind of call. */
    readonly type: RedlimitContextType,
  ) {
    this.handler = context.getHandler();
    this.controller = context.getClass();
    if (type === 'http') {
      // What switchToHttp() returns, without the three closures it allocates.
      this.requestOf = context.getArgByIndex<HttpRequestLike>(0);
      this.responseOf = context.getArgByIndex<HttpResponseLike>(1);
      this.requestRead = this.responseRead = true;
      this.call = this.requestOf;
    } else {
      this.requestRead = this.responseRead = false;
      // Every guard and interceptor of one call sees the same argument list.
      this.call = context.getArgs();
    }
  }

  /**
   * The HTTP request behind the call (see {@link contextRequest}): the route's, the one carrying
   * a GraphQL operation, a WebSocket's upgrade request, a TCP peer's socket; or none.
   */
  get request(): HttpRequestLike | undefined {
    if (!this.requestRead) {
      this.requestOf = contextRequest(this.context);
      this.requestRead = true;
    }
    return this.requestOf;
  }

  /** The HTTP response the rate-limit headers go on (see {@link contextResponse}), or none. */
  get response(): HttpResponseLike | undefined {
    if (!this.responseRead) {
      this.responseOf = contextResponse(this.context);
      this.responseRead = true;
    }
    return this.responseOf;
  }

  /**
   * The client IP by `source` (`RedlimitHttp.clientIp`), or `'unknown'` on a transport without
   * addresses. Computed once per view, and once per request when an earlier step of the call
   * shared it ({@link shareClientIp}): the guard of an `@Attempt` route shares it with the
   * interceptor. A request whose client cannot be named throws every time it is asked (never
   * kept).
   */
  clientIp(source: ClientIpSource): string {
    if (this.ipSource === source) return this.ip!;
    const request = this.request;
    if (request === undefined) return UNKNOWN_CLIENT;
    const shared = (request as Shared)[REQUEST_CLIENT_IP];
    const ip = shared?.source === source ? shared.ip : source.clientIp(request);
    this.ipSource = source;
    return (this.ip = ip);
  }

  /**
   * Leaves the client IP computed so far on the request, for the later steps of the same call
   * (every HTTP request, and every resolver of one GraphQL request, that carries it).
   */
  shareClientIp(): void {
    const request = this.requestOf;
    if (this.ipSource === undefined || request === undefined) return;
    (request as Shared)[REQUEST_CLIENT_IP] = { source: this.ipSource, ip: this.ip! };
  }

  /**
   * What separates routes in default keys: `ItemsController.get /items/:id` over HTTP (the
   * handler, then the route template when the adapter names one), else `graphql Query.items`,
   * `ws ChatGateway.send`, `rpc MathController.sum`. Never the HTTP method: cycling methods on an
   * `@All` route must not multiply its limit.
   */
  get route(): string {
    if (this.routeOf === undefined) {
      if (this.type === 'http') {
        const handler = `${(this.controller as { name: string }).name}.${(this.handler as { name: string }).name}`;
        this.routeOf = routeName(handler, routeTemplate(this.requestOf!));
      } else {
        this.routeOf = `${this.type} ${contextRoute(this.context)}`;
      }
    }
    return this.routeOf;
  }
}

/**
 * The view of a call, or `undefined` for a context type redlimit does not limit (its guard and
 * interceptor let those through).
 *
 * @example
 * const view = requestView(context);
 * if (view === undefined) return next.handle();
 */
export function requestView(context: ExecutionContext): RequestView | undefined {
  const type = redlimitContextType(context);
  return type === undefined ? undefined : new RequestView(context, type);
}
