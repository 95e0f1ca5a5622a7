import type { ExecutionContext } from '@nestjs/common';
import {
  type HttpRequestLike,
  type HttpResponseLike,
  requestUserId,
} from '../../http/http-request.util';

/**
 * The kinds of handler redlimit limits: HTTP routes, GraphQL resolvers, WebSocket gateway
 * handlers and microservice (RPC) handlers.
 */
export type RedlimitContextType = 'http' | 'graphql' | 'ws' | 'rpc';

// Structural views of what the GraphQL, WebSocket and microservice packages hand a handler, so
// that redlimit/nest loads (and type-checks) in apps that have none of them installed.

/** `GqlExecutionContext.getContext()`: Apollo puts `req` (and `res` if asked), Mercurius `reply`. */
interface GraphQLContextLike {
  readonly req?: HttpRequestLike & { readonly res?: HttpResponseLike };
  readonly res?: HttpResponseLike;
  readonly reply?: HttpResponseLike & { readonly request?: HttpRequestLike };
  /** graphql-ws subscriptions: the upgrade request. */
  readonly extra?: { readonly request?: HttpRequestLike };
  readonly user?: unknown;
}

/** The `info` argument of a resolver. */
interface GraphQLInfoLike {
  readonly parentType?: { readonly name?: unknown };
  readonly fieldName?: unknown;
}

/** A `ws` WebSocket (`_socket`) or a socket.io Socket (`request`, the handshake request). */
interface WsClientLike {
  readonly request?: HttpRequestLike;
  readonly _socket?: { readonly remoteAddress?: string };
  readonly user?: unknown;
  readonly data?: unknown;
}

/** A microservice context; the TCP one (`TcpContext`) can name its socket. */
interface RpcContextLike {
  getSocketRef?(): { readonly netSocket?: SocketLike; readonly socket?: SocketLike } | undefined;
}

interface SocketLike {
  readonly remoteAddress?: string;
}

/**
 * The kind of handler a context runs, or `undefined` for a kind redlimit does not know (its
 * guard and interceptor let those through).
 *
 * @example
 * if (redlimitContextType(context) === 'graphql') {
 *   const info = context.getArgByIndex<GraphQLResolveInfo>(3);
 * }
 */
export function redlimitContextType(context: ExecutionContext): RedlimitContextType | undefined {
  const type = context.getType<string>();
  return type === 'http' || type === 'graphql' || type === 'ws' || type === 'rpc'
    ? type
    : undefined;
}

/**
 * The HTTP request behind a handler, as far as there is one: the request of a route, the request
 * carrying a GraphQL operation, the upgrade request of a WebSocket (socket.io keeps it; a `ws`
 * socket only its address), the TCP connection of a microservice message. What the client IP is
 * read from.
 *
 * @example
 * const ip = http.clientIp(contextRequest(context) ?? {});
 */
export function contextRequest(context: ExecutionContext): HttpRequestLike | undefined {
  switch (redlimitContextType(context)) {
    case 'http':
      // What switchToHttp().getRequest() returns, without the three closures it allocates.
      return context.getArgByIndex<HttpRequestLike>(0);
    case 'graphql': {
      const gql = asObject<GraphQLContextLike>(context.getArgByIndex(2));
      return gql?.req ?? gql?.reply?.request ?? gql?.extra?.request;
    }
    case 'ws': {
      const client = asObject<WsClientLike>(context.switchToWs().getClient());
      if (client?.request) return client.request;
      return client?._socket ? { socket: client._socket } : undefined;
    }
    case 'rpc': {
      const ref = asObject<RpcContextLike>(context.switchToRpc().getContext());
      const socketRef = typeof ref?.getSocketRef === 'function' ? ref.getSocketRef() : undefined;
      const socket = socketRef?.netSocket ?? socketRef?.socket;
      return socket ? { socket } : undefined;
    }
    default:
      return undefined;
  }
}

/**
 * The HTTP response a handler's rate-limit headers go on: the route's response, or for GraphQL
 * the response in the GraphQL context (`res`, `reply`, else Express's `req.res`). `undefined`
 * where there is none (WebSocket, RPC, GraphQL on Fastify without `reply` in the context).
 *
 * @example
 * const response = contextResponse(context);
 * if (response) http.applyHeaders(response, decision, limiter.policy);
 */
export function contextResponse(context: ExecutionContext): HttpResponseLike | undefined {
  switch (redlimitContextType(context)) {
    case 'http':
      return context.getArgByIndex<HttpResponseLike>(1);
    case 'graphql': {
      const gql = asObject<GraphQLContextLike>(context.getArgByIndex(2));
      return gql?.res ?? gql?.reply ?? gql?.req?.res;
    }
    default:
      return undefined;
  }
}

/**
 * What names a handler in default keys, the way a route template names an HTTP route: the
 * GraphQL `Type.field` (`Mutation.signIn`), else the handler's `Class.method`.
 *
 * @example
 * contextRoute(context); // 'Query.items' in a resolver, 'ChatGateway.send' in a gateway
 */
export function contextRoute(context: ExecutionContext): string {
  if (redlimitContextType(context) === 'graphql') {
    const info = asObject<GraphQLInfoLike>(context.getArgByIndex(3));
    const type = info?.parentType?.name;
    const field = info?.fieldName;
    if (typeof type === 'string' && typeof field === 'string') return `${type}.${field}`;
  }
  return `${context.getClass().name}.${context.getHandler().name}`;
}

/**
 * The caller's user id (`user.id`, else `user.sub`): HTTP `request.user`; GraphQL `req.user`,
 * else `user` of the GraphQL context; WebSocket `client.user`, else `client.data.user`
 * (socket.io); RPC `payload.user`.
 *
 * @example
 * contextUserId(context); // '42'
 */
export function contextUserId(context: ExecutionContext): string | undefined {
  switch (redlimitContextType(context)) {
    case 'http':
      return requestUserId(context.getArgByIndex<HttpRequestLike>(0));
    case 'graphql': {
      const gql = asObject<GraphQLContextLike>(context.getArgByIndex(2));
      return requestUserId({ user: gql?.req?.user ?? gql?.user });
    }
    case 'ws': {
      const client = asObject<WsClientLike>(context.switchToWs().getClient());
      const data = asObject<{ user?: unknown }>(client?.data);
      return requestUserId({ user: client?.user ?? data?.user });
    }
    case 'rpc': {
      const payload = asObject<{ user?: unknown }>(context.switchToRpc().getData<unknown>());
      return requestUserId({ user: payload?.user });
    }
    default:
      return undefined;
  }
}

function asObject<T extends object>(value: unknown): T | undefined {
  return value !== null && typeof value === 'object' ? (value as T) : undefined;
}
