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
import type {
  AccessListOptions,
  ClientIpHeader,
  ClientIpOptions,
  RateLimitHeaderStyle,
} from '../http/http-options.types';

export type { AccessListOptions, ClientIpHeader, ClientIpOptions, RateLimitHeaderStyle };

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
  /**
   * Outcome markers on the Redis store built from `redis` (see `RedisStoreOptions.outcomeMarkers`):
   * a spend whose reply is lost with its connection is given back, and a command a reconnecting
   * client sends again is charged once. `false` saves one write per script run where a unit lost
   * now and then does not matter. Default `true`.
   */
  readonly outcomeMarkers?: boolean;
  /**
   * How often this process beats in its fleet, in ms, while a policy has `failMode: 'memory'`
   * (see `RedisStoreOptions.fleetBeatMs`): the fallback's share of each limit is the limit divided
   * by the fleet's size. Applies to the store built from `redis`. Default 5 000.
   */
  readonly fleetBeatMs?: number;
  /**
   * How long a process stays in its fleet after its latest beat, in ms (see
   * `RedisStoreOptions.fleetTtlMs`). Applies to the store built from `redis`. Default 600 000.
   */
  readonly fleetTtlMs?: number;
  /**
   * Live limits: how often each process asks the store whether the policy overrides changed (one
   * read of a version number), in ms; a change made with `LimiterRegistry.override` or `redlimit
   * policies set` is in force on every instance within this (plus a round trip). From 50 to
   * 60 000; default 500. See docs/live-limits.md.
   */
  readonly overridesPollMs?: number;
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
