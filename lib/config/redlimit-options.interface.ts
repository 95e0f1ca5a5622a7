import type { ExecutionContext } from '@nestjs/common';
import type { ClusterNode, ClusterOptions, RedisOptions } from 'ioredis';
import type { StoreFailure } from '../core/decision';
import type { DecisionListener } from '../core/events';
import type { FailMode, PolicyOptions } from '../core/policy';
import type { OpenTelemetryMetricsOptions } from '../metrics/opentelemetry.metrics';
import type { PrometheusMetricsOptions } from '../metrics/prometheus.metrics';
import type { RedisStoreClient } from '../stores/clients/redis-client.shape';
import type { RefusalCacheOptions } from '../stores/refusal-cache';
import type { RedisSentinelOptions } from './redis-sentinel.util';
import type { Store } from '../stores/store.interface';

/**
 * Which rate-limit headers responses carry.
 *
 * - `'ietf'`: `RateLimit-Policy: "login";q=10;w=900` and `RateLimit: "login";r=3;t=412`
 *   (draft-ietf-httpapi-ratelimit-headers-09 and later)
 * - `'legacy'`: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (seconds)
 * - `'both'`: all of the above
 * - `false`: none (a refusal still carries `Retry-After`)
 */
export type RateLimitHeaderStyle = 'ietf' | 'legacy' | 'both' | false;

/**
 * A Redis connection for the module.
 *
 * - a URL string, or `{ url, ...ioredisOptions }`, or plain ioredis options (`{ host, port }`):
 *   the module creates the client and closes it on application shutdown;
 * - `{ client }`: your own client, never closed by the module: ioredis or iovalkey `Redis` or
 *   `Cluster`, or node-redis `createClient()` or `createCluster()` (connected by you);
 * - `{ nodes, clusterOptions? }`: the module creates an ioredis `Cluster` and closes it on shutdown;
 * - `{ sentinels, name, ...ioredisOptions }`: the module creates an ioredis client that asks the
 *   sentinels where the master `name` is and follows failovers; closed on shutdown (see
 *   {@link RedisSentinelOptions}).
 *
 * @example
 * RedlimitModule.forRoot({ redis: 'redis://localhost:6379' });
 * RedlimitModule.forRoot({ redis: { url: process.env.REDIS_URL, connectTimeout: 2000 } });
 * RedlimitModule.forRoot({ redis: { client: existingRedis } });
 * RedlimitModule.forRoot({ redis: { nodes: [{ host: 'redis-0', port: 6379 }] } });
 * RedlimitModule.forRoot({ redis: { sentinels: [{ host: 'sentinel-0', port: 26379 }], name: 'mymaster' } });
 */
export type RedisConnectionOptions =
  | string
  | {
      /** Your own connected client; the module never closes it. */
      readonly client: RedisStoreClient;
    }
  | {
      /** Startup nodes of the Redis Cluster (ioredis `Cluster`); the module closes it on shutdown. */
      readonly nodes: readonly ClusterNode[];
      /** Options of the ioredis `Cluster`; `redisOptions` apply to each node's connection. */
      readonly clusterOptions?: ClusterOptions;
    }
  | RedisSentinelOptions
  | (RedisOptions & {
      /** A `redis://` or `rediss://` URL; the other ioredis options apply on top of it. */
      readonly url?: string;
    });

/**
 * The request header a trusted proxy names the client in: `'x-forwarded-for'` (a chain, walked
 * from the right past trusted proxies), `'forwarded'` (RFC 7239 `for=`, walked the same way), or
 * the single-address headers of Cloudflare (`'cf-connecting-ip'`), Akamai and Cloudflare
 * Enterprise (`'true-client-ip'`), Fly.io (`'fly-client-ip'`) and nginx setups (`'x-real-ip'`).
 */
export type ClientIpHeader =
  | 'x-forwarded-for'
  | 'forwarded'
  | 'cf-connecting-ip'
  | 'true-client-ip'
  | 'fly-client-ip'
  | 'x-real-ip';

/**
 * How the client IP (the default tracker of `@Throttle` and the `'ip'` part of `@Attempt`) is
 * found.
 *
 * @example
 * RedlimitModule.forRoot({ clientIp: { trustedProxies: ['10.0.3.7', '10.0.3.8'], ipv6Subnet: 56 } });
 * RedlimitModule.forRoot({ clientIp: { trustedProxies: ['10.0.3.0/28'], trustedHops: 1 } });
 * RedlimitModule.forRoot({ clientIp: { trustedProxies: CLOUDFLARE_RANGES, header: 'cf-connecting-ip' } });
 */
export interface ClientIpOptions {
  /**
   * Proxies whose client-IP header is believed: addresses (`'10.0.0.7'`), CIDR ranges
   * (`'10.0.0.0/8'`, `'fd00::/8'`), the names `'loopback'`, `'private'` (RFC 1918 and `fc00::/7`)
   * and `'linklocal'`, and `'unix'` (the peer of a request that came over a Unix domain socket,
   * such as nginx's `proxy_pass http://unix:/run/app.sock`). The client is the right-most address
   * of the chain that is not a trusted proxy. Every address in these ranges is taken for a proxy:
   * trusting a whole private range lets any client that holds an address there (a VPN or a peered
   * VPC, another container) name its own address, unless `trustedHops` bounds the walk (a warning
   * says so at startup under `NODE_ENV=production`). Default: none — the peer address of the
   * connection is the client and `X-Forwarded-For` is ignored.
   */
  readonly trustedProxies?: readonly string[];
  /**
   * How many proxies are in front of the app, the one that connects to it included (as a number
   * in Express's `trust proxy`): the chain is walked from the right past at most this many hops,
   * and each of them must also be in `trustedProxies` (required with it); the walk stops earlier
   * at the first hop that is not. A client, whatever address it holds, then cannot make itself a
   * proxy by writing more hops. For `'x-forwarded-for'` and `'forwarded'` only. A whole number
   * ≥ 1; default: no bound.
   */
  readonly trustedHops?: number;
  /**
   * IPv6 clients are grouped by this prefix length, since one host usually holds a whole /64.
   * Default 64; 128 keeps single addresses. IPv4-mapped IPv6 addresses count as IPv4.
   */
  readonly ipv6Subnet?: number;
  /**
   * The header your proxy writes the client in; believed only from `trustedProxies` (required
   * when this is set). Other headers are ignored: a proxy passes on the headers it does not
   * write, so reading them would let clients choose their address. Default `'x-forwarded-for'`.
   */
  readonly header?: ClientIpHeader;
}

/**
 * Which metrics the module records from its decision events (see `RedlimitEvents`):
 *
 * - `'prometheus'`: prom-client's default `register` (the one `@willsoto/nestjs-prometheus`
 *   serves), same as `{ prometheus: true }`; `{ prometheus: { registry, prefix, buckets } }` for
 *   another registry;
 * - `'opentelemetry'`: the global meter provider's `redlimit` meter, same as
 *   `{ opentelemetry: true }`; `{ opentelemetry: { meter, buckets } }` for another meter;
 * - both at once as `{ prometheus: true, opentelemetry: true }`; `false` or unset: none.
 *
 * The package asked for (`prom-client`, `@opentelemetry/api`) must be installed, or the app fails
 * to boot with a `MissingPeerDependencyError` naming it.
 *
 * @example
 * RedlimitModule.forRoot({ redis: process.env.REDIS_URL, metrics: 'prometheus' });
 * RedlimitModule.forRoot({ redis: process.env.REDIS_URL, metrics: { prometheus: { registry } } });
 */
export type RedlimitMetricsOptions = {
  /** Prometheus metrics through prom-client: `true` for its default `register`. */
  readonly prometheus?: boolean | PrometheusMetricsOptions;
  /** OpenTelemetry metrics through `@opentelemetry/api`: `true` for the global meter provider. */
  readonly opentelemetry?: boolean | OpenTelemetryMetricsOptions;
};

/**
 * Callers named by the module's `allow` or `deny` list. A request matches the list when any one
 * entry matches: its client IP (found by the `clientIp` rules, as for the limits; IPv6 compared
 * as the full address, not its /64 group) is in `ips`, its API key (the `apiKey.header` header,
 * default `x-api-key`) is one of `apiKeys`, or its `User-Agent` equals a string of `userAgents`
 * or passes a RegExp of it.
 *
 * @example
 * RedlimitModule.forRoot({
 *   allow: { ips: ['10.0.0.0/8', '2001:db8::/32', 'loopback'], apiKeys: [process.env.MONITOR_KEY!] },
 *   deny: { ips: ['203.0.113.7'], userAgents: [/^BadBot\//] },
 * });
 */
export interface AccessListOptions {
  /**
   * Addresses (`'203.0.113.7'`, `'2001:db8::1'`), CIDR ranges (`'10.0.0.0/8'`,
   * `'2001:db8::/32'`) and the names `'loopback'`, `'private'`, `'linklocal'`.
   */
  readonly ips?: readonly string[];
  /** API keys, compared in constant time (as SHA-256 digests); never logged. */
  readonly apiKeys?: readonly string[];
  /** `User-Agent` values: a string matches exactly (case-sensitive), a RegExp by `test()`. */
  readonly userAgents?: readonly (string | RegExp)[];
}

/**
 * Trusted devices for `@Attempt(parts, { devices: '<login part>' })` (OWASP "device cookies"): a
 * sign-in that succeeds gets a device token (a cookie, or a header API clients send back), and
 * later attempts that carry it for the same login are charged to that device's own budget, not to
 * the account's: an attacker who keeps the account locked for everyone else cannot keep its owner
 * out. See {@link RedlimitDevices}.
 *
 * @example
 * RedlimitModule.forRoot({ keySecret: process.env.REDLIMIT_KEY_SECRET, devices: { ttl: '90d' } });
 */
export interface DevicesOptions {
  /**
   * Signs device tokens (HMAC-SHA-256), at least 16 characters. Default: the module's
   * `keySecret`; one of them is required. Changing it voids every token issued.
   */
  readonly secret?: string;
  /**
   * How long a token is valid (and the cookie kept), on the store's clock: 1 minute to 366 days.
   * Default `'30d'`.
   */
  readonly ttl?: number | string;
  /**
   * Failures one device may make per token lifetime before it stays refused until its token
   * expires (besides the policy's own limits and lockouts, which apply to each device): a
   * stolen token is not a way around the limits. 1 to 10 000. Default: 10 × the policy's smallest
   * limit.
   */
  readonly maxFailures?: number;
  /**
   * The cookie the token is set in on a successful sign-in, or `false` for none (API clients
   * then get the token from {@link RedlimitDevices.trust} only). Defaults: name
   * `'redlimit_device'`, path `'/'`, `secure: true`, `sameSite: 'Lax'`; always `HttpOnly`, with
   * `Max-Age` the `ttl`.
   */
  readonly cookie?:
    | false
    | {
        /** Cookie name. Default `'redlimit_device'`. */
        readonly name?: string;
        /** Cookie path. Default `'/'`. */
        readonly path?: string;
        /** Cookie domain. Default: none (the host that set it). */
        readonly domain?: string;
        /** Send only over HTTPS. Default `true`. */
        readonly secure?: boolean;
        /** `SameSite`. Default `'Lax'`. */
        readonly sameSite?: 'Strict' | 'Lax' | 'None';
      };
  /**
   * The request header API clients may send the token in instead of the cookie (it wins over
   * the cookie), or `false`. Default `'redlimit-device'`.
   */
  readonly header?: string | false;
}

/** A policy in {@link RedlimitModuleOptions.policies}: its name is its key in the record. */
export type PolicyDefinition = Omit<PolicyOptions, 'name'>;

/**
 * Options of `RedlimitModule.forRoot()` (or the result of `forRootAsync()`'s `useFactory`).
 *
 * @example
 * RedlimitModule.forRoot({
 *   redis: process.env.REDIS_URL,
 *   policies: {
 *     login: { algorithm: 'fixed-window', limit: 10, window: '15m' },
 *     api: { algorithm: 'sliding-window', limit: 100, window: '1m', failMode: 'open' },
 *   },
 *   defaultPolicy: 'api',
 *   headers: 'both',
 * });
 */
export interface RedlimitModuleOptions {
  /** Where budgets live, shared by every process. See {@link RedisConnectionOptions}. */
  readonly redis?: RedisConnectionOptions;
  /**
   * Any other {@link Store} (e.g. a `MemoryStore` in tests). Ignored when `redis` is set. With
   * neither, a `MemoryStore` is used and a startup warning says limits are per process.
   */
  readonly store?: Store;
  /** Prepended to every Redis key the module's store writes. Default `'rl:'`. */
  readonly prefix?: string;
  /** Named policies, available to `@Throttle('name')`, `@Attempt(…, { policy })` and the registry. */
  readonly policies?: Readonly<Record<string, PolicyDefinition>>;
  /**
   * Policy of `@Attempt` without `options.policy`, and a layer on every call a `RedlimitGuard`
   * sees: alone where there is no `@Throttle`, stacked with the `@Throttle` layers elsewhere (as
   * one decision), unless a layer overrides or the call is skipped with `@SkipThrottle()`.
   * Default: none.
   */
  readonly defaultPolicy?: string;
  /**
   * Budget of the `defaultPolicy` layer: `'route'` (default) per route and caller, `'app'` one per
   * caller across every route (e.g. a global per-IP limit for everyone).
   */
  readonly defaultPolicyScope?: 'route' | 'app';
  /**
   * The API key of `@Throttle(…, { by: 'apiKey' })` and of the `'apiKey'` part of `@Attempt`:
   * which request header carries it (default `'x-api-key'`), and `validate(key, context)`, which
   * says whether a key is a real one (e.g. a cached lookup). Unrecognised keys are charged by
   * client IP, so invented keys cannot mint fresh budgets; without `validate`, any key counts:
   * pair such a layer with a per-IP layer. The key is only ever stored and logged hashed (with
   * `keySecret` when set).
   */
  readonly apiKey?: {
    /** The request header that carries the key. Default `'x-api-key'`. */
    readonly header?: string;
    /**
     * Whether `key` is a real one; a key it rejects is charged by client IP instead. Default:
     * every key counts.
     */
    readonly validate?: (key: string, context: ExecutionContext) => boolean | Promise<boolean>;
  };
  /**
   * Callers never charged and never limited: a request that matches is let through by
   * `RedlimitGuard` and `@Attempt` without a spend and without rate-limit headers (decision events
   * say `skipped`). `deny` wins over `allow`. See {@link AccessListOptions}.
   */
  readonly allow?: AccessListOptions;
  /**
   * Callers refused outright: a request that matches is answered 403 (GraphQL: `FORBIDDEN`;
   * WebSocket and RPC: an error with code `FORBIDDEN`) by `RedlimitGuard` and `@Attempt` before
   * anything is charged (decision events say `denied`). Wins over `allow` and `skipIf`. Applies
   * to the handlers redlimit limits; a route under `@SkipThrottle()` without `@Attempt` is not
   * checked. See {@link AccessListOptions}.
   */
  readonly deny?: AccessListOptions;
  /**
   * Lets a call through uncharged, without rate-limit headers, when it returns true (decision
   * events say `skipped`): e.g. health probes or signed-in admins. Asked at most once per call
   * (the guard and `@Attempt` share the answer), after the `deny` and `allow` lists; a throw
   * fails the call. Not asked for denied or allowed callers.
   *
   * @example
   * skipIf: (ctx) => ctx.switchToHttp().getRequest<{ user?: { role?: string } }>().user?.role === 'admin',
   */
  readonly skipIf?: (context: ExecutionContext) => boolean | Promise<boolean>;
  /**
   * Shadow mode for every policy that does not set `shadow` itself: refusals are let through
   * (no 429), marked `decision.shadowRefused`, counted as `shadow-refused` by decision events and
   * metrics, and logged at most once per policy every 10 s. To roll out a new limit: ship it in
   * shadow, watch the metric, then enforce. Default `false`.
   */
  readonly shadow?: boolean;
  /**
   * The Redis store's refusal cache (see `RedisStoreOptions.refusalCache`): a caller refused with
   * a wait (out of budget, or locked out) is refused again in process, without a round trip, until
   * the wait has passed, asking Redis again at least every `maxAgeMs` (default 1 s: an unlock on
   * another instance is seen within it). `true` keeps at most 10 000 refusals; `{ maxKeys,
   * maxAgeMs }` sets the bounds. Applies to the store built from `redis` (the in-memory store needs none). Default off.
   */
  readonly refusalCache?: boolean | RefusalCacheOptions;
  /** Fail mode of policies that set none. Default `'closed'`. */
  readonly failMode?: FailMode;
  /** Longest wait for the store per decision, in ms. Default 1000. */
  readonly timeoutMs?: number;
  /** `Retry-After` of a 503 sent because the store failed (fail mode `closed`), in ms. Default 1000. */
  readonly failureRetryAfterMs?: number;
  /** Rate-limit headers on allowed and refused responses. Default `'ietf'`. */
  readonly headers?: RateLimitHeaderStyle;
  /** How the client IP is found. Default: the connection's peer address, IPv6 grouped by /64. */
  readonly clientIp?: ClientIpOptions;
  /**
   * Secret mixed into the hashes of `@Attempt` values and API keys (HMAC-SHA-256), so stored keys
   * cannot be matched against a list of known emails. At least 16 characters (a shorter one, or
   * an empty one, stops startup). Default: plain SHA-256.
   */
  readonly keySecret?: string;
  /**
   * Signs the receipts of the module's limiters (`LimiterOptions.receiptSecret`, at least 16
   * characters): a receipt that was edited, forged or moved to another key is refused before the
   * store is touched. Set it when receipts leave the process (a reservation token handed to a
   * worker, a receipt kept in a database); every instance needs the same one. Default: none.
   */
  readonly receiptSecret?: string;
  /**
   * Trusted devices: owners who signed in before keep getting in while an attacker keeps their
   * account locked for everyone else. Off by default. See {@link DevicesOptions}.
   */
  readonly devices?: DevicesOptions;
  /**
   * Called for every store failure a decision absorbed. Default: a warning through the Nest
   * `Logger` (context `Redlimit`), at most one per policy every 10 s.
   */
  readonly onStoreFailure?: (failure: StoreFailure, policy: string) => void;
  /**
   * Metrics recorded from every decision of the module's limiters. Default: none. See
   * {@link RedlimitMetricsOptions}.
   */
  readonly metrics?: 'prometheus' | 'opentelemetry' | false | RedlimitMetricsOptions;
  /**
   * Called with every decision event of the module's limiters (consume, peek, refund; keys only as
   * hashes). It must not throw (a throw is reported as a process warning). Inject
   * `RedlimitEvents` to subscribe from a provider instead.
   */
  readonly onDecision?: DecisionListener;
}
