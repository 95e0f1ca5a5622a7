import type { Cluster, Redis } from 'ioredis';
import type { ScriptOperation } from './scripts';
import { scriptFor } from './scripts';
import { nextSpendId, usesSpendIds } from './spend-id.util';
import { storageKeys } from './storage-key.util';
import type {
  RefundRequest,
  ResetRequest,
  SpendRequest,
  SpendResult,
  Store,
} from './store.interface';

/** An ioredis client: a single `Redis` connection or a `Cluster`. */
export type RedisClient = Redis | Cluster;

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /** The ioredis client to run scripts on. The store never closes it. */
  readonly client: RedisClient;
  /** Prepended to every stored key. Default `'rl:'`. */
  readonly prefix?: string;
  /**
   * Replaces Redis `TIME` as the source of time (ms since the epoch), e.g. a controllable clock
   * in tests or simulations. Windows follow this clock; Redis still expires keys in real time, so
   * expiries are shifted by the clock's distance from real time, rounded up to whole days, plus one
   * day: keys then outlive their windows by up to two days of real time (harmless: a key of a past
   * window counts as empty), and a clock may stand still for a day without losing state.
   */
  readonly clock?: () => number;
}

type ScriptReply = [number, number, number, number, number, number, number];
type ScriptCommand = (numKeys: number, ...args: Array<string | number>) => Promise<unknown>;

/**
 * Budget in Redis, shared by every process that uses the same Redis and prefix. Each decision is
 * one Lua script run (EVALSHA, reloaded transparently after a script flush or restart), so the
 * check and the spend cannot be interleaved with anything.
 *
 * @example
 * const store = new RedisStore({ client: new Redis(process.env.REDIS_URL!) });
 * const limiter = new Limiter(store, { name: 'login', algorithm: 'fixed-window', limit: 10, window: '15m' });
 */
export class RedisStore implements Store {
  private readonly client: RedisClient;
  /** Prepended to every stored key. */
  readonly prefix: string;
  private readonly clock?: () => number;
  private readonly expiryOffsetMs: number;

  constructor(options: RedisStoreOptions) {
    const client = options?.client;
    if (!client || typeof (client as { defineCommand?: unknown }).defineCommand !== 'function') {
      throw new TypeError('RedisStore options.client must be an ioredis Redis or Cluster client');
    }
    const prefix = options.prefix ?? 'rl:';
    if (typeof prefix !== 'string') {
      throw new TypeError(`RedisStore options.prefix must be a string; got ${typeof prefix}`);
    }
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw new TypeError(
        'RedisStore options.clock must be a function returning ms since the epoch',
      );
    }
    this.client = client;
    this.prefix = prefix;
    this.clock = options.clock;
    this.expiryOffsetMs = options.clock ? expiryOffset(options.clock()) : 0;
  }

  consume(request: SpendRequest): Promise<SpendResult> {
    return this.decide(request, true);
  }

  peek(request: SpendRequest): Promise<SpendResult> {
    return this.decide(request, false);
  }

  async refund(request: RefundRequest): Promise<void> {
    const keys = storageKeys(this.prefix, request.keys, request.policy, request.limits.length);
    await this.run(request.algorithm, 'refund', keys, [
      this.now(),
      this.expiryOffsetMs,
      request.cost,
      request.at,
      request.spendId ?? '',
      ...limitArgs(request),
    ]);
  }

  async reset(request: ResetRequest): Promise<void> {
    const keys = storageKeys(this.prefix, request.keys, request.policy, request.limits.length);
    await this.client.del(...keys);
  }

  private async decide(request: SpendRequest, spend: boolean): Promise<SpendResult> {
    const keys = storageKeys(this.prefix, request.keys, request.policy, request.limits.length);
    const spendId = spend && usesSpendIds(request.algorithm) ? nextSpendId() : undefined;
    const reply = (await this.run(request.algorithm, 'consume', keys, [
      this.now(),
      this.expiryOffsetMs,
      request.cost,
      spend ? '1' : '0',
      spendId ?? '',
      ...limitArgs(request),
    ])) as ScriptReply;
    const [allowed, remaining, binding, retryAfterMs, resetAfterMs, refusing, at] = reply;
    return {
      allowed: allowed === 1,
      remaining,
      limitIndex: binding - 1,
      retryAfterMs,
      resetAfterMs,
      blockedKeyIndex: refusing - 1,
      at,
      ...(spendId !== undefined && allowed === 1 && { spendId }),
    };
  }

  /** The clock's reading for ARGV, or '' to have the script read Redis TIME. */
  private now(): string {
    return this.clock ? String(Math.floor(this.clock())) : '';
  }

  /** Runs a script by SHA; ioredis loads it again with EVAL when Redis answers NOSCRIPT. */
  private run(
    algorithm: SpendRequest['algorithm'],
    operation: ScriptOperation,
    keys: string[],
    args: Array<string | number>,
  ): Promise<unknown> {
    const { command, lua } = scriptFor(algorithm, operation);
    const client = this.client as unknown as Record<string, ScriptCommand | undefined>;
    if (!client[command]) this.client.defineCommand(command, { lua });
    const call = client[command] as ScriptCommand;
    return call.call(this.client, keys.length, ...keys, ...args).catch(explainScriptError);
  }
}

/** Script errors a user can act on get a message that says what to do. */
function explainScriptError(error: unknown): never {
  const message = error instanceof Error ? error.message : String(error);
  if (/unknown (redis )?command/i.test(message) && /pexpiretime|script/i.test(message)) {
    throw new Error(
      `redlimit needs Redis 7.0 or later (its scripts call PEXPIRETIME and SET … PXAT): ${message}`,
      { cause: error },
    );
  }
  throw error;
}

const DAY_MS = 86_400_000;

/**
 * Maps window ends on a custom clock to real expiry instants. Whole days, so stores built at
 * slightly different moments on the same clock agree (the fixed window recognises its counter by
 * its exact expiry), and one day ahead, so a short window never expires before it is read.
 */
function expiryOffset(clockNow: number): number {
  return Math.ceil((Date.now() - Math.floor(clockNow)) / DAY_MS) * DAY_MS + DAY_MS;
}

function limitArgs(request: SpendRequest): Array<number> {
  const args: number[] = [request.limits.length];
  for (const { limit, windowMs, burst } of request.limits) args.push(limit, windowMs, burst);
  return args;
}
