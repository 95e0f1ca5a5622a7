import type { IncomingHttpHeaders } from 'node:http';
import { UNIX_SOCKET_PEER } from './client-ip-header.util';

/**
 * The parts of an Express `Request` or a Fastify `FastifyRequest` redlimit reads. Both adapters
 * are handled by shape, never by importing either framework.
 */
export interface HttpRequestLike {
  /** The HTTP method. */
  readonly method?: string;
  /** The request URL as received (path and query). */
  readonly url?: string;
  /** The request headers, lower-cased names (client IP headers, the API key header). */
  readonly headers?: IncomingHttpHeaders;
  /** Express and Fastify (a getter over `raw.socket`). */
  readonly socket?: {
    /** The connection's peer address (none over a Unix domain socket). */
    readonly remoteAddress?: string;
    /** The server that accepted the connection. */
    readonly server?: {
      /** Where it listens: a path for a Unix socket. */
      address?(): unknown;
    } | null;
  };
  /** Fastify: the Node request. */
  readonly raw?: {
    /** The Node request's socket. */
    readonly socket?: {
      /** The connection's peer address (none over a Unix domain socket). */
      readonly remoteAddress?: string;
      /** The server that accepted the connection. */
      readonly server?: {
        /** Where it listens: a path for a Unix socket. */
        address?(): unknown;
      } | null;
    };
  };
  /** Express: the matched route. */
  readonly route?: {
    /** The route's path template, e.g. `/items/:id`. */
    readonly path?: unknown;
  };
  /** Express: the mount path of the router. */
  readonly baseUrl?: string;
  /** Fastify: the matched route. */
  readonly routeOptions?: {
    /** The route's URL template, e.g. `/items/:id`. */
    readonly url?: string;
  };
  /** The parsed body, read by `'body.…'` parts and key functions. */
  readonly body?: unknown;
  /** The route parameters, read by `'params.…'` parts. */
  readonly params?: unknown;
  /** The parsed query string, read by `'query.…'` parts. */
  readonly query?: unknown;
  /** What an authentication guard set; the `'user'` part reads its `id`, else `sub`. */
  readonly user?: unknown;
}

/**
 * The parts of an Express `Response` or a Fastify `FastifyReply` redlimit writes: both have
 * `header(name, value)`; a bare Node response has `setHeader`.
 */
export interface HttpResponseLike {
  /** Express and Fastify: sets a response header. */
  header?(name: string, value: string): unknown;
  /** A bare Node `ServerResponse`: sets a response header. */
  setHeader?(name: string, value: string): unknown;
}

/**
 * The connection's peer address (never a header); `'unix'` for a connection accepted on a Unix
 * domain socket (which has no peer address); `undefined` when it cannot be read (the client reset
 * the connection).
 */
export function peerAddress(request: HttpRequestLike): string | undefined {
  const socket = request.socket ?? request.raw?.socket;
  const address = socket?.remoteAddress ?? request.raw?.socket?.remoteAddress;
  if (address !== undefined) return address;
  const server = socket?.server ?? request.raw?.socket?.server;
  return typeof server?.address === 'function' && typeof server.address() === 'string'
    ? UNIX_SOCKET_PEER
    : undefined;
}

/**
 * The route template that matched (`/items/:id`), so path parameters cannot mint fresh budgets;
 * `undefined` when the adapter does not say.
 */
export function routeTemplate(request: HttpRequestLike): string | undefined {
  const fastifyUrl = request.routeOptions?.url;
  if (typeof fastifyUrl === 'string') return fastifyUrl;
  const expressPath = request.route?.path;
  if (typeof expressPath === 'string') return `${request.baseUrl ?? ''}${expressPath}`;
  return undefined;
}

/** Sets a response header on Express, Fastify or a bare Node response. */
export function setResponseHeader(response: HttpResponseLike, name: string, value: string): void {
  if (typeof response.header === 'function') response.header(name, value);
  else if (typeof response.setHeader === 'function') response.setHeader(name, value);
}

/** `request.user.id`, else `request.user.sub`, as a string. */
export function requestUserId(request: HttpRequestLike): string | undefined {
  const user = request.user;
  if (user === null || typeof user !== 'object') return undefined;
  const { id, sub } = user as { id?: unknown; sub?: unknown };
  return scalarValue(id) ?? scalarValue(sub);
}

/**
 * A request value as key material: strings as they are, finite numbers and bigints as text;
 * anything else (arrays, objects, booleans, `null`) is missing.
 *
 * @example
 * scalarValue(42); // '42'
 * scalarValue(['a']); // undefined
 */
export function scalarValue(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint') return value.toString();
  return undefined;
}
