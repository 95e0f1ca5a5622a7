import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { MemoryStore } from '../stores/memory.store';
import { RedisStore, type RedisClient } from '../stores/redis.store';
import type { Store } from '../stores/store.interface';
import { maskUrl } from './mask-url.util';
import { REDLIMIT_LOGGER_CONTEXT } from './redlimit.constants';
import { closeRedisClient, createRedisClient } from './redis-client.factory';
import { isSentinelConnection } from './redis-sentinel.util';
import type { RedisConnectionOptions, RedlimitModuleOptions } from './redlimit-options.interface';

/** The key prefix of a RedisStore without one (the module's documented default). */
const DEFAULT_PREFIX = 'rl:';

/** Connection errors are logged at most this often (ioredis reports every reconnection). */
const ERROR_LOG_INTERVAL_MS = 10_000;

/**
 * The module's store and, when the module created it, its Redis client, which it closes on
 * application shutdown (a client you passed in is left open). Injectable, e.g. for a health check.
 *
 * @example
 * constructor(private readonly connection: RedlimitConnection) {}
 * health() {
 *   return { rateLimits: this.connection.kind, redis: this.connection.client?.status };
 * }
 */
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
]);

export class RedlimitConnection implements OnApplicationShutdown {
  private constructor(
    /** The store every limiter of the module uses. */
    readonly store: Store,
    /** `'redis'`, `'memory'` (the default MemoryStore) or `'custom'` (a store from options). */
    readonly kind: 'redis' | 'memory' | 'custom',
    /** The Redis client, when the store is the module's RedisStore. */
    readonly client: RedisClient | undefined,
    private readonly owned: boolean,
    private readonly closeTimeoutMs: number,
  ) {}

  /**
   * Builds the store from module options: Redis when `redis` is set, else `store`, else a
   * MemoryStore with a warning that limits are per process.
   */
  static async open(options: RedlimitModuleOptions): Promise<RedlimitConnection> {
    const unknown = Object.keys(options ?? {}).filter((name) => !MODULE_OPTIONS.has(name));
    if (unknown.length > 0) {
      // A typo (`polices`, `timeout`) would otherwise be ignored in silence.
      throw new TypeError(
        `RedlimitModule has unknown option ${unknown.map((name) => `'${name}'`).join(', ')}; ` +
          `known: ${[...MODULE_OPTIONS].join(', ')}`,
      );
    }
    const logger = new Logger(REDLIMIT_LOGGER_CONTEXT);
    const timeoutMs = options.timeoutMs ?? 1000;
    if (options.redis !== undefined) {
      const { client, owned } = await createRedisClient(options.redis);
      if (owned) logConnectionErrors(client, logger);
      else {
        const risk = unboundedQueueRisk(client);
        if (risk) logger.warn(risk);
      }
      const store = new RedisStore({
        client,
        ...(options.prefix !== undefined && { prefix: options.prefix }),
        ...(options.refusalCache !== undefined && { refusalCache: options.refusalCache }),
      });
      logger.log(
        `Rate limits are kept in Redis at ${describeRedis(options.redis, client)}, ` +
          `prefix '${options.prefix ?? DEFAULT_PREFIX}'`,
      );
      return new RedlimitConnection(store, 'redis', client, owned, timeoutMs);
    }
    if (options.refusalCache !== undefined && options.refusalCache !== false) {
      logger.warn(
        'refusalCache applies to the Redis store built from `redis`; it is ignored for ' +
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
      return new RedlimitConnection(store, 'custom', undefined, false, timeoutMs);
    }
    logger.warn(
      'No redis or store configured: using the in-memory store, so limits are per process ' +
        '(each instance of the app keeps its own budgets). Set `redis` for shared limits.',
    );
    return new RedlimitConnection(new MemoryStore(), 'memory', undefined, false, timeoutMs);
  }

  /** Closes the Redis client if the module created it. */
  async onApplicationShutdown(): Promise<void> {
    if (this.client && this.owned) await closeRedisClient(this.client, this.closeTimeoutMs);
  }
}

/**
 * A client passed in needs no special settings for correctness: every spend carries a deadline,
 * so a command replayed after an outage writes nothing. One combination is still unsafe for the
 * app: an offline queue with `maxRetriesPerRequest: null` keeps every command of an outage in
 * memory, without bound, until Redis comes back.
 */
function unboundedQueueRisk(client: RedisClient): string | undefined {
  const options = client.options as {
    enableOfflineQueue?: boolean;
    maxRetriesPerRequest?: number | null;
    redisOptions?: { maxRetriesPerRequest?: number | null };
  };
  const retries =
    'redisOptions' in options && options.redisOptions
      ? options.redisOptions.maxRetriesPerRequest
      : options.maxRetriesPerRequest;
  if (options.enableOfflineQueue === false || retries !== null) return undefined;
  return (
    'The Redis client passed to RedlimitModule queues commands while disconnected with ' +
    'maxRetriesPerRequest: null: during an outage every rate-limit command waits in memory ' +
    '(decisions still answer within timeoutMs, and replayed spends write nothing). ' +
    'Set maxRetriesPerRequest to a small number, or enableOfflineQueue: false, on that client.'
  );
}

function logConnectionErrors(client: RedisClient, logger: Logger): void {
  let lastLoggedAt = -Infinity;
  client.on('error', (error: Error) => {
    const now = performance.now();
    if (now - lastLoggedAt < ERROR_LOG_INTERVAL_MS) return;
    lastLoggedAt = now;
    logger.warn(
      `Redis connection error (decisions follow each policy's fail mode): ${error.message}`,
    );
  });
}

/** Where the module's Redis is, for the startup log: a URL (password masked) or host:port. */
function describeRedis(redis: RedisConnectionOptions, client: RedisClient): string {
  if (typeof redis === 'string') return maskUrl(redis);
  if ('nodes' in redis) {
    const nodes = redis.nodes.map((node) =>
      typeof node === 'object' ? `${node.host ?? 'localhost'}:${node.port ?? 6379}` : String(node),
    );
    return `Cluster ${nodes.join(', ')}`;
  }
  if ('client' in redis) {
    if ((client as { isCluster?: boolean }).isCluster) return 'Cluster (the client passed in)';
    const { host, port } = client.options as { host?: string; port?: number };
    return `${host ?? 'localhost'}:${port ?? 6379} (the client passed in)`;
  }
  if (isSentinelConnection(redis)) {
    const sentinels = redis.sentinels.map(({ host, port }) => `${host}:${port}`);
    return `the master '${redis.name}' of Sentinel ${sentinels.join(', ')}`;
  }
  if (redis.url !== undefined) return maskUrl(redis.url);
  return `${redis.host ?? 'localhost'}:${redis.port ?? 6379}`;
}
