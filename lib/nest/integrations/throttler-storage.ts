import { Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import type { StoreFailure } from '../../core/decision';
import { Limiter, type LimiterOptions } from '../../core/limiter';
import type { FailMode } from '../../core/policy';
import type { Store } from '../../core/store';
import type { RedisStoreClient } from '../../stores/clients/redis-client.shape';
import { RedisStore } from '../../stores/redis.store';
import { REDLIMIT_LOGGER_CONTEXT } from '../module/redlimit.constants';
import { warnEvery } from '../../core/warn-every.util';
import { checkKnownNames } from '../../core/options.util';

/**
 * What @nestjs/throttler's `ThrottlerGuard` reads back from its storage for one hit (the shape of
 * its `ThrottlerStorageRecord`, declared here so redlimit does not depend on @nestjs/throttler).
 */
export interface ThrottlerStorageRecordLike {
  /** Hits counted in the current window, this one included (`limit + 1` once refused). */
  readonly totalHits: number;
  /** Seconds until the window's count starts over. */
  readonly timeToExpire: number;
  /** Whether this hit is refused (the guard answers 429). */
  readonly isBlocked: boolean;
  /** Seconds until a refused caller may try again (the guard's `Retry-After`); 0 when allowed. */
  readonly timeToBlockExpire: number;
}

/** Options of {@link RedlimitThrottlerStorage}: a Redis client or any redlimit store. */
export type RedlimitThrottlerStorageOptions = (
  | {
      /**
       * A client the storage builds a {@link RedisStore} on: ioredis or iovalkey `Redis` or
       * `Cluster`, or node-redis `createClient()` or `createCluster()`.
       */
      readonly client: RedisStoreClient;
      /** Key prefix of that store. Default `'rl:'`. */
      readonly prefix?: string;
    }
  | {
      /** Any redlimit store (a `RedisStore` you configured, or a `MemoryStore` in tests). */
      readonly store: Store;
    }
) & {
  /** When the store fails: `'closed'` (default) refuses the hit, `'open'` lets it through. */
  readonly failMode?: Exclude<FailMode, 'memory'>;
  /** Longest wait for the store per hit, in ms. Default 1000. */
  readonly timeoutMs?: number;
  /**
   * Called for every store failure a hit absorbed (the guard cannot tell it from a limit: under
   * `'closed'` it answers its usual 429). Default: a warning through Nest's `Logger`, context
   * `Redlimit`, at most once every 10 s.
   */
  readonly onStoreFailure?: (failure: StoreFailure) => void;
};

const OPTIONS: ReadonlySet<string> = new Set([
  'client',
  'prefix',
  'store',
  'failMode',
  'timeoutMs',
  'onStoreFailure',
]);

/**
 * A storage for @nestjs/throttler (`ThrottlerModule.forRoot({ throttlers, storage })`) on
 * redlimit's atomic scripts: every hit is one fixed-window decision in Redis, checked and counted
 * in one script run, so limits hold across instances and under concurrency (50 concurrent hits at
 * limit 5 let exactly 5 through). `blockDuration` is a redlimit lockout: the hit that goes over
 * the limit locks the caller's key out for `blockDuration` (the guard's default: the `ttl`).
 * Unlike the default storage, a refused hit costs nothing: only admitted hits are counted.
 *
 * As in @nestjs/throttler's own storage, a key has one count per throttler name (and `ttl`),
 * compared with the `limit` of each call: a limit resolved per request shares that count, so it
 * never mints budgets. A limit below 1 refuses every hit, a fractional one admits its whole part
 * (2.5 admits 2), `Infinity` admits every hit; a limit, `ttl` or `blockDuration` that is not a
 * number (or NaN) is a `TypeError`/`RangeError` naming it.
 *
 * @example
 * ThrottlerModule.forRoot({
 *   throttlers: [{ ttl: 60_000, limit: 10 }],
 *   storage: new RedlimitThrottlerStorage({ client: new Redis(process.env.REDIS_URL!) }),
 * });
 */
export class RedlimitThrottlerStorage {
  /**
   * Most limiters (one per `(name, ttl, limit, blockDuration)` seen) kept; past it the least
   * recently used is dropped. Dropping one loses nothing: the counts live in the store.
   */
  static readonly MAX_LIMITERS = 1_000;

  private readonly store: Store;
  private readonly limiters = new Map<string, Limiter>();
  private readonly limiterOptions: LimiterOptions;

  /** @throws TypeError / RangeError naming a bad option */
  constructor(options: RedlimitThrottlerStorageOptions) {
    if (options === null || typeof options !== 'object') {
      throw new TypeError('RedlimitThrottlerStorage needs options { client } or { store }');
    }
    checkKnownNames(
      options,
      OPTIONS,
      (name, known) =>
        `RedlimitThrottlerStorage options.${name} is not an option (known: ${known})`,
    );
    if ('store' in options && options.store !== undefined) {
      if ('client' in options) {
        throw new TypeError('RedlimitThrottlerStorage takes either client or store, not both');
      }
      this.store = options.store;
    } else if ('client' in options) {
      this.store = new RedisStore({
        client: options.client,
        ...(options.prefix !== undefined && { prefix: options.prefix }),
      });
    } else {
      throw new TypeError('RedlimitThrottlerStorage needs options { client } or { store }');
    }
    const { failMode = 'closed', timeoutMs, onStoreFailure } = options;
    if (failMode !== 'closed' && failMode !== 'open') {
      throw new RangeError(
        `RedlimitThrottlerStorage options.failMode must be 'closed' or 'open'; got ${JSON.stringify(failMode)}`,
      );
    }
    if (onStoreFailure !== undefined && typeof onStoreFailure !== 'function') {
      throw new TypeError('RedlimitThrottlerStorage options.onStoreFailure must be a function');
    }
    this.limiterOptions = {
      failMode,
      ...(timeoutMs !== undefined && { timeoutMs }),
      onStoreFailure: onStoreFailure ?? logStoreFailure(),
    };
    // Builds one limiter, so bad options throw here rather than on the first hit.
    new Limiter(
      this.store,
      { name: 'check', algorithm: 'fixed-window', limit: 1, window: 1 },
      this.limiterOptions,
    );
  }

  /**
   * One hit of `key` under a throttler: `limit` hits per `ttl` ms, and, when over, refused for
   * `blockDuration` ms. Called by `ThrottlerGuard`.
   *
   * @throws TypeError / RangeError naming `ttl`, `limit` or `blockDuration` when it is not a
   * number, NaN, or (`ttl`) not above 0, or (`blockDuration`) negative
   */
  async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecordLike> {
    checkArguments(ttl, limit, blockDuration);
    const windowMs = Math.ceil(ttl);
    const blockMs = Math.ceil(blockDuration);
    // ThrottlerGuard refuses when `totalHits > limit`: the whole part of the limit is admitted.
    // The scripts keep limit × window below 2^53; no count gets near that bound.
    const admitted = Math.min(Math.floor(limit), Math.floor(Number.MAX_SAFE_INTEGER / windowMs));
    if (admitted < 1) {
      const seconds = Math.max(1, Math.ceil(windowMs / 1000));
      return {
        totalHits: 1,
        timeToExpire: seconds,
        isBlocked: true,
        timeToBlockExpire: blockMs > 0 ? Math.max(1, Math.ceil(blockMs / 1000)) : seconds,
      };
    }
    const decision = await this.limiter(windowMs, admitted, blockMs, throttlerName).consume(key);
    const timeToExpire = Math.max(1, Math.ceil(decision.resetAfterMs / 1000));
    if (decision.allowed) {
      return {
        totalHits: admitted - decision.remaining,
        timeToExpire,
        isBlocked: false,
        timeToBlockExpire: 0,
      };
    }
    return {
      totalHits: admitted + 1,
      timeToExpire,
      isBlocked: true,
      timeToBlockExpire: Math.max(1, Math.ceil(decision.retryAfterMs / 1000)),
    };
  }

  /**
   * The limiter of one throttler setting. Its policy name is a hash of the throttler's name and
   * `ttl` alone, so every limit and `blockDuration` of that throttler reads and writes the same
   * stored count (a fixed window's count does not depend on the limit) and the same lockout.
   */
  private limiter(ttl: number, limit: number, blockDuration: number, name: string): Limiter {
    const id = `${name}\u0000${ttl}\u0000${limit}\u0000${blockDuration}`;
    let limiter = this.limiters.get(id);
    if (limiter !== undefined) {
      this.limiters.delete(id); // most recently used goes last
    } else {
      const hash = createHash('sha256').update(`${name}\u0000${ttl}`).digest('hex').slice(0, 16);
      limiter = new Limiter(
        this.store,
        {
          name: `throttler.${hash}`,
          algorithm: 'fixed-window',
          limit,
          window: ttl,
          // Every setting honours the key's lockout, so a call without blockDuration cannot pass
          // a caller another route of this throttler locked out (whose lockout forgot the shared
          // count); only a setting with one starts lockouts.
          block:
            blockDuration > 0
              ? { duration: blockDuration, max: blockDuration, forgetAfter: 1, restart: true }
              : { duration: 0 },
        },
        this.limiterOptions,
      );
      if (this.limiters.size >= RedlimitThrottlerStorage.MAX_LIMITERS) {
        this.limiters.delete(this.limiters.keys().next().value!);
      }
    }
    this.limiters.set(id, limiter);
    return limiter;
  }
}

function checkArguments(ttl: unknown, limit: unknown, blockDuration: unknown): void {
  const got = (value: unknown) =>
    typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? String(value));
  if (typeof limit !== 'number' || Number.isNaN(limit)) {
    throw new TypeError(`RedlimitThrottlerStorage: limit must be a number; got ${got(limit)}`);
  }
  if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl <= 0) {
    throw new RangeError(
      `RedlimitThrottlerStorage: ttl must be a number of ms above 0; got ${got(ttl)}`,
    );
  }
  if (
    typeof blockDuration !== 'number' ||
    !(blockDuration >= 0) ||
    !Number.isFinite(blockDuration)
  ) {
    throw new RangeError(
      `RedlimitThrottlerStorage: blockDuration must be a number of ms, 0 or more; got ${got(blockDuration)}`,
    );
  }
}

/** A warning per failure would flood the log (every hit fails alike): one every 10 s at most. */
function logStoreFailure(): (failure: StoreFailure) => void {
  const logger = new Logger(REDLIMIT_LOGGER_CONTEXT);
  const warn = warnEvery((message) => logger.warn(message));
  return (failure) =>
    warn(() => {
      const outcome =
        failure.failMode === 'open'
          ? 'failing open: hits are let through without limits'
          : 'failing closed: hits are refused as over the limit (429)';
      return `RedlimitThrottlerStorage: store ${failure.reason}, ${outcome} (${failure.error.message})`;
    });
}
