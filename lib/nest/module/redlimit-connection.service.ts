import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { MemoryStore } from '../../stores/memory.store';
import { clientStatus } from '../../stores/clients/client-port';
import type { RedisStoreClient } from '../../stores/clients/redis-client.shape';
import { fleetTimes, RedisStore, type RedisClient } from '../../stores/redis.store';
import type { Store } from '../../stores/store.interface';
import { describeRedis } from '../../config/describe-redis.util';
import { warnEvery } from '../../core/warn-every.util';
import { checkUnknownOptions } from '../../core/options.util';
import { REDLIMIT_LOGGER_CONTEXT } from './redlimit.constants';
import { closeRedisClient, createRedisClient } from '../../config/redis-client.factory';
import type { RedlimitModuleOptions } from '../../config/redlimit-options.interface';

/** The key prefix of a RedisStore without one (the module's documented default). */
/** The module's key prefix when `prefix` is not set. */
export const DEFAULT_PREFIX = 'rl:';

/** Every option of {@link RedlimitModuleOptions}, and the module extras `forRoot` passes along. */
const MODULE_OPTIONS: ReadonlySet<string> = new Set([
  'isGlobal',
  'attemptInterceptor',
  'redis',
  'store',
  'prefix',
  'policies',
  'defaultPolicy',
  'defaultPolicyScope',
  'apiKey',
  'failMode',
  'timeoutMs',
  'failureRetryAfterMs',
  'headers',
  'clientIp',
  'keySecret',
  'onStoreFailure',
  'metrics',
  'onDecision',
  'allow',
  'deny',
  'skipIf',
  'shadow',
  'refusalCache',
  'outcomeMarkers',
  'fleetBeatMs',
  'fleetTtlMs',
  'overridesPollMs',
  'devices',
  'receiptSecret',
]);

/**
 * The module's store and, when the module created it, its Redis client, which it closes on
 * application shutdown (a client you passed in is left open). Injectable, e.g. for a health check.
 *
 * @example
 * constructor(private readonly connection: RedlimitConnection) {}
 * health() {
 *   return { rateLimits: this.connection.kind, redis: this.connection.status };
 * }
 */
export class RedlimitConnection implements OnApplicationShutdown {
  /**
   * The ioredis client, when the store is the module's RedisStore on one: the client the module
   * created, or an ioredis (or iovalkey, its fork) client given in `redis: { client }`. Undefined
   * for a node-redis client: see {@link redisClient}.
   */
  readonly client: RedisClient | undefined;

  private constructor(
    /** The store every limiter of the module uses. */
    readonly store: Store,
    /** `'redis'`, `'memory'` (the default MemoryStore) or `'custom'` (a store from options). */
    readonly kind: 'redis' | 'memory' | 'custom',
    /**
     * The Redis client of the module's RedisStore, whichever its package: the ioredis client the
     * module created, or the client given in `redis: { client }` (ioredis, iovalkey, node-redis).
     */
    readonly redisClient: RedisStoreClient | undefined,
    /** The client the module created, which it closes on shutdown. */
    private readonly ownedClient: RedisClient | undefined,
    private readonly closeTimeoutMs: number,
  ) {
    // iovalkey's types are a fork of ioredis's: the same members, other declarations.
    this.client =
      redisClient !== undefined && 'status' in redisClient
        ? (redisClient as RedisClient)
        : undefined;
  }

  /** The Redis client's state (`ready`, `reconnecting`, `end`, …), or undefined without Redis. */
  get status(): string | undefined {
    return this.redisClient && clientStatus(this.redisClient);
  }

  /**
   * Builds the store from module options: Redis when `redis` is set, else `store`, else a
   * MemoryStore with a warning that limits are per process.
   * @internal
   */
  static async open(options: RedlimitModuleOptions): Promise<RedlimitConnection> {
    // A typo (`polices`, `timeout`) would otherwise be ignored in silence.
    checkUnknownOptions(
      options ?? {},
      MODULE_OPTIONS,
      'RedlimitModule',
      `known: ${[...MODULE_OPTIONS].join(', ')}`,
    );
    const secret: unknown = options.keySecret;
    if (secret !== undefined && (typeof secret !== 'string' || secret.length < 16)) {
      // A short secret is guessed as easily as no secret; the value itself is never shown.
      throw new TypeError(
        'RedlimitModule keySecret must be a string of at least 16 characters ' +
          `(got ${typeof secret === 'string' ? `${secret.length} characters` : `a ${typeof secret}`}); ` +
          'leave it undefined for plain SHA-256',
      );
    }
    const logger = new Logger(REDLIMIT_LOGGER_CONTEXT);
    const timeoutMs = options.timeoutMs ?? 1000;
    if (options.redis !== undefined) {
      // The store's own options, checked before a client is created (none is left open).
      if (options.outcomeMarkers !== undefined && typeof options.outcomeMarkers !== 'boolean') {
        throw new TypeError('RedlimitModule options.outcomeMarkers must be true or false');
      }
      fleetTimes(options.fleetBeatMs, options.fleetTtlMs, 'RedlimitModule options');
      const created = await createRedisClient(options.redis);
      const { client } = created;
      if (created.owned) logConnectionErrors(created.client, logger);
      else {
        const risk = unboundedQueueRisk(client);
        if (risk) logger.warn(risk);
      }
      const store = new RedisStore({
        client,
        ...(options.prefix !== undefined && { prefix: options.prefix }),
        ...(options.refusalCache !== undefined && { refusalCache: options.refusalCache }),
        ...(options.outcomeMarkers !== undefined && { outcomeMarkers: options.outcomeMarkers }),
        ...(options.fleetBeatMs !== undefined && { fleetBeatMs: options.fleetBeatMs }),
        ...(options.fleetTtlMs !== undefined && { fleetTtlMs: options.fleetTtlMs }),
      });
      logger.log(
        `Rate limits are kept in Redis at ${describeRedis(options.redis, client)}, ` +
          `prefix '${options.prefix ?? DEFAULT_PREFIX}'`,
      );
      const owned = created.owned ? created.client : undefined;
      return new RedlimitConnection(store, 'redis', client, owned, timeoutMs);
    }
    const redisOnly = [
      options.refusalCache !== undefined && options.refusalCache !== false && 'refusalCache',
      options.outcomeMarkers !== undefined && 'outcomeMarkers',
      options.fleetBeatMs !== undefined && 'fleetBeatMs',
      options.fleetTtlMs !== undefined && 'fleetTtlMs',
    ].filter((name): name is string => name !== false);
    for (const name of redisOnly) {
      logger.warn(
        `${name} applies to the Redis store built from \`redis\`; it is ignored for ` +
          (options.store !== undefined ? 'the store given in options' : 'the in-memory store'),
      );
    }
    if (options.store !== undefined) {
      const store = options.store;
      if (!store || typeof store.consume !== 'function' || typeof store.refund !== 'function') {
        throw new TypeError(
          'RedlimitModule store must implement Store (consume, peek, refund, reset)',
        );
      }
      logger.log(`Rate limits are kept in the store given in options (${store.constructor.name})`);
      return new RedlimitConnection(store, 'custom', undefined, undefined, timeoutMs);
    }
    logger.warn(
      'No redis or store configured: using the in-memory store, so limits are per process ' +
        '(each instance of the app keeps its own budgets). Set `redis` for shared limits.',
    );
    return new RedlimitConnection(new MemoryStore(), 'memory', undefined, undefined, timeoutMs);
  }

  /**
   * Leaves the store's fleet (a `RedisStore` whose limiters use `failMode: 'memory'`: the others'
   * shares grow at their next beat), then closes the Redis client if the module created it.
   */
  async onApplicationShutdown(): Promise<void> {
    const { store } = this;
    if (store instanceof RedisStore && store.fleet.view !== undefined) {
      await store.leaveFleet().catch(() => undefined); // Redis may be the reason for the shutdown
    }
    if (this.ownedClient) await closeRedisClient(this.ownedClient, this.closeTimeoutMs);
  }
}

/**
 * A client passed in needs no special settings for correctness: every spend carries a deadline,
 * so a command replayed after an outage writes nothing. One combination is still unsafe for the
 * app: an offline queue with `maxRetriesPerRequest: null` keeps every command of an outage in
 * memory, without bound, until Redis comes back. (node-redis queues without bound by default, as
 * its users know; it is not warned about.)
 */
function unboundedQueueRisk(client: RedisStoreClient): string | undefined {
  if (!('status' in client)) return undefined; // node-redis
  const options = (client as { options?: object }).options as {
    enableOfflineQueue?: boolean;
    maxRetriesPerRequest?: number | null;
    redisOptions?: { maxRetriesPerRequest?: number | null };
  };
  const retries =
    'redisOptions' in options && options.redisOptions
      ? options.redisOptions.maxRetriesPerRequest
      : options.maxRetriesPerRequest;
  if (!options || options.enableOfflineQueue === false || retries !== null) return undefined;
  return (
    'The Redis client passed to RedlimitModule queues commands while disconnected with ' +
    'maxRetriesPerRequest: null: during an outage every rate-limit command waits in memory ' +
    '(decisions still answer within timeoutMs, and replayed spends write nothing). ' +
    'Set maxRetriesPerRequest to a small number, or enableOfflineQueue: false, on that client.'
  );
}

function logConnectionErrors(client: RedisClient, logger: Logger): void {
  // Logged at most once every 10 s: ioredis reports every reconnection.
  const warn = warnEvery((message) => logger.warn(message));
  client.on('error', (error: Error) => {
    warn(
      () => `Redis connection error (decisions follow each policy's fail mode): ${error.message}`,
    );
  });
}
