/**
 * Everything `npm run bench` measures, one {@link Contender} each: the floors, every redlimit
 * algorithm, the peers, and redlimit on Cluster. A row's name says how its decisions reach Redis:
 * one script run each ("unbatched"), several commands per socket write ("pipelined": ioredis
 * `enableAutoPipelining`, still one script run per decision), or several decisions per script run
 * ("coalesced": redlimit's default on one node).
 */
import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { type Algorithm, type Decision, Limiter, RedisStore } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import type { Bar } from '../support/bar-chart.util';
import { type ConsumeShape, type ShapedFloor, shapedKeys } from './consume-shape';

export interface Contender {
  readonly name: string;
  readonly kind: Bar['kind'];
  /** 'cluster' rows run on the local Cluster and are compared with their own reference. */
  readonly on: 'node' | 'cluster';
  /** One decision for caller `i`. */
  readonly run: (i: number) => Promise<unknown>;
  /** Brings the row's callers to the state it measures (run once, before its warm-up). */
  readonly prepare?: () => Promise<void>;
  /** Left out of the memory pass (its keys say nothing of a caller's footprint). */
  readonly noFootprint?: boolean;
}

/** The clients the contenders send on; each is warmed before it is measured. */
export interface Clients {
  /** A plain ioredis client: every command written as it is issued. */
  readonly plain: Redis;
  /** A client with `enableAutoPipelining: true`. */
  readonly pipelined: Redis;
  /** An ioredis Cluster client on the local Cluster, when it runs. */
  readonly cluster?: Cluster;
}

/**
 * Key names and limits of one pass. Throughput: a run prefix and limits that never refuse (every
 * decision is a spend). Memory: default key names and a realistic 10 per 15 minutes, since a
 * token bucket or GCRA state under a huge limit refills (and expires) within milliseconds.
 */
export interface Pass {
  readonly prefix: string;
  policy(algorithm: Algorithm): string;
  limit(algorithm: Algorithm): number;
  readonly windowMs: number;
  /** Whether decisions must be allowed (throughput) or may be refused (memory). */
  readonly neverRefuses: boolean;
}

/**
 * A policy's numbers, which decide whether a bucket's state outlives the gap between a caller's
 * decisions: at 2,000 callers and ~70,000 decisions/s a caller comes back every ~30 ms.
 */
export interface PolicyShape {
  /** How rows and targets name it. */
  readonly label: string;
  readonly limit: number;
  readonly windowMs: number;
}

/**
 * The throughput pass's policy (sliding log aside, see compare.ts): a spend leaves a token bucket
 * or GCRA 3.6 ms of backlog, so its state has expired before the caller's next decision, which
 * starts from a full bucket (nothing to read).
 */
export const PER_HOUR: PolicyShape = {
  label: '10^6 per hour',
  limit: 1_000_000,
  windowMs: 3_600_000,
};

/**
 * The second shape: a spend leaves 86.4 ms of backlog, so the state stays between a caller's
 * decisions (over 2,000 callers, at more than ~23,000 decisions/s) and every decision reads and
 * rewrites it. Never refuses in a run (a caller spends a few thousand of its 10^6).
 */
export const PER_DAY: PolicyShape = {
  label: '10^6 per day',
  limit: 1_000_000,
  windowMs: 86_400_000,
};

/** Algorithms that also run in {@link PER_DAY} (one key): the buckets, and fixed window as a control. */
export const PER_DAY_ALGORITHMS: readonly Algorithm[] = ['token-bucket', 'gcra', 'fixed-window'];

/** Row names the targets and the reference ratios refer to. */
export const NAMES = {
  floor: 'floor: EVALSHA INCR+PEXPIRE (unbatched)',
  floorPipelined: 'floor: EVALSHA INCR+PEXPIRE, pipelined',
  floorShaped: "floor in redlimit's call shape (unbatched)",
  get: 'floor: GET (unbatched)',
  /** In the pass's policy ({@link PER_HOUR} in the throughput pass). */
  ours: (algorithm: Algorithm, keys: 1 | 2) =>
    `redlimit ${algorithm}, ${keys} key${keys > 1 ? 's' : ''} (coalesced)`,
  /** One key in another policy shape. */
  shaped: (algorithm: Algorithm, shape: PolicyShape) =>
    `redlimit ${algorithm}, 1 key, ${shape.label} (coalesced)`,
  uncoalesced: (keys: 1 | 2) =>
    `redlimit fixed-window, ${keys} key${keys > 1 ? 's' : ''}, coalesce: false (unbatched)`,
  flexible: 'rate-limiter-flexible (unbatched)',
  flexiblePipelined: 'rate-limiter-flexible, pipelined',
  throttler: '@nest-lab/throttler-storage-redis (unbatched)',
  throttlerPipelined: '@nest-lab/throttler-storage-redis, pipelined',
  cluster: 'redlimit fixed-window, 1 key, Cluster per master (store default)',
  clusterUncoalesced: 'redlimit fixed-window, 1 key, Cluster per master, coalesce: false',
  refusalCache: 'redlimit fixed-window, 1 key, locked-out callers, refusalCache (no round trip)',
} as const;

function ipOf(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

type ScriptCommand = (numberOfKeys: number, ...args: Array<string | number>) => Promise<unknown>;

/** A script on `client` under `name`, sent as EVALSHA (ioredis loads it on NOSCRIPT). */
function script(client: Redis, name: string, lua: string): ScriptCommand {
  client.defineCommand(name, { lua });
  const command = (client as unknown as Record<string, ScriptCommand>)[name]!;
  return command.bind(client);
}

/** Throws unless a redlimit decision spent: a failure or refusal would measure something else. */
function spent(decision: Decision): void {
  if (decision.failure) throw decision.failure.error;
  if (!decision.allowed) throw new Error(`refused: the bench's limits must never refuse`);
}

export function contendersFor(
  clients: Clients,
  pass: Pass,
  callers: number,
  shape: ConsumeShape,
  shaped: ShapedFloor,
): Contender[] {
  const { prefix, windowMs } = pass;
  const { plain, pipelined } = clients;
  const ips = Array.from({ length: callers }, (_, i) => ipOf(i));
  const ipKeys = ips.map((ip) => `ip:${ip}`);
  const pairs = ips.map((ip, i) => [`ip:${ip}`, `email:user${i}@example.com`]);
  const check = pass.neverRefuses ? spent : () => {};
  const list: Contender[] = [];
  const add = (
    name: string,
    kind: Bar['kind'],
    run: Contender['run'],
    on: Contender['on'] = 'node',
    extra: Pick<Contender, 'prepare' | 'noFootprint'> = {},
  ) => list.push({ name, kind, on, run, ...extra });

  // The floor: one script run per decision that does the least a counter must (INCR + PEXPIRE).
  const floorLua =
    "local n = redis.call('INCR', KEYS[1])\nredis.call('PEXPIRE', KEYS[1], ARGV[1])\nreturn n";
  const floor = script(plain, 'benchFloor', floorLua);
  const floorPipelined = script(pipelined, 'benchFloor', floorLua);
  const floorKeys = ipKeys.map((key) => `${prefix}floor:${key}`);
  add(NAMES.floor, 'reference', (i) => floor(1, floorKeys[i]!, windowMs));
  add(NAMES.floorPipelined, 'reference', (i) => floorPipelined(1, floorKeys[i]!, windowMs));
  const shapedCalls = ipKeys.map((key) => shapedKeys(shape, key));
  add(NAMES.floorShaped, 'reference', (i) => shaped.call(shapedCalls[i]!));
  const getKeys = ipKeys.map((key) => `${prefix}get:${key}`);
  add(NAMES.get, 'reference', (i) => plain.get(getKeys[i]!));

  const limiters = (store: RedisStore) =>
    new Map(
      ALGORITHMS.map((algorithm) => [
        algorithm,
        new Limiter(store, {
          name: pass.policy(algorithm),
          algorithm,
          limit: pass.limit(algorithm),
          window: windowMs,
        }),
      ]),
    );
  const coalesced = limiters(new RedisStore({ client: plain, prefix: `${prefix}rl:` }));
  for (const algorithm of ALGORITHMS) {
    const limiter = coalesced.get(algorithm)!;
    add(NAMES.ours(algorithm, 1), 'ours', async (i) => check(await limiter.consume(ipKeys[i]!)));
    add(NAMES.ours(algorithm, 2), 'ours', async (i) => check(await limiter.consume(pairs[i]!)));
  }
  // The buckets (and fixed window as a control) in a shape whose state stays between decisions.
  // Throughput only: in the memory pass every row uses the pass's policy.
  if (pass.neverRefuses) {
    const store = new RedisStore({ client: plain, prefix: `${prefix}rl:` });
    for (const algorithm of PER_DAY_ALGORITHMS) {
      const limiter = new Limiter(store, {
        name: `${pass.policy(algorithm)}-per-day`,
        algorithm,
        limit: PER_DAY.limit,
        window: PER_DAY.windowMs,
      });
      add(
        NAMES.shaped(algorithm, PER_DAY),
        'ours',
        async (i) => check(await limiter.consume(ipKeys[i]!)),
        'node',
        { noFootprint: true },
      );
    }
  }
  const uncoalesced = limiters(
    new RedisStore({ client: plain, prefix: `${prefix}rl:`, coalesce: false }),
  ).get('fixed-window')!;
  add(NAMES.uncoalesced(1), 'ours', async (i) => check(await uncoalesced.consume(ipKeys[i]!)));
  add(NAMES.uncoalesced(2), 'ours', async (i) => check(await uncoalesced.consume(pairs[i]!)));

  // Callers locked out for an hour (policy option block), on a store with the refusal cache: every
  // decision is a refusal answered in process. prepare() locks each caller out (two calls each).
  // maxAgeMs as long as the lockout: the in-process path alone (by default a refused caller asks
  // Redis again once a second, which this row would count as a miss).
  const locking = new Limiter(
    new RedisStore({
      client: plain,
      prefix: `${prefix}rl:`,
      refusalCache: { maxAgeMs: 3_600_000 },
    }),
    {
      name: `${pass.policy('fixed-window')}-locked`,
      algorithm: 'fixed-window',
      limit: 1,
      window: windowMs,
      block: { duration: '1h' },
    },
  );
  add(
    NAMES.refusalCache,
    'ours',
    async (i) => {
      const decision = await locking.consume(ipKeys[i]!);
      if (decision.allowed || !decision.cached)
        throw new Error('a locked-out caller reached Redis');
    },
    'node',
    {
      noFootprint: true,
      prepare: async () => {
        for (const key of ipKeys) {
          await locking.consume(key);
          const locked = await locking.consume(key);
          if (locked.blockedUntil === undefined) throw new Error(`${key} was not locked out`);
        }
      },
    },
  );

  // rate-limiter-flexible in its ioredis mode: one EVALSHA of its INCR + PTTL script.
  const flexible = (storeClient: Redis) =>
    new RateLimiterRedis({
      storeClient,
      keyPrefix: `${prefix}rlflx`,
      points: pass.limit('fixed-window'),
      duration: windowMs / 1000,
    });
  const [flexiblePlain, flexiblePipelined] = [flexible(plain), flexible(pipelined)];
  add(NAMES.flexible, 'peer', (i) => flexiblePlain.consume(ips[i]!));
  add(NAMES.flexiblePipelined, 'peer', (i) => flexiblePipelined.consume(ips[i]!));

  // @nest-lab/throttler-storage-redis as @nestjs/throttler's ThrottlerGuard calls it: the key is
  // the guard's SHA-256 of class, handler, throttler name and tracker.
  const throttlerKeys = ips.map(
    (ip) =>
      prefix + createHash('sha256').update(`BenchController-hello-default-${ip}`).digest('hex'),
  );
  const limit = pass.limit('fixed-window');
  for (const [name, client] of [
    [NAMES.throttler, plain],
    [NAMES.throttlerPipelined, pipelined],
  ] as const) {
    const storage = new ThrottlerStorageRedisService(client);
    if (storage.redis !== client)
      throw new Error('ThrottlerStorageRedisService did not take the client');
    add(name, 'peer', (i) =>
      storage.increment(throttlerKeys[i]!, windowMs, limit, windowMs, 'default'),
    );
  }

  if (clients.cluster) {
    // The same store options as the single-node rows they are compared with.
    for (const [name, coalesce] of [
      [NAMES.cluster, true],
      [NAMES.clusterUncoalesced, false],
    ] as const) {
      const onCluster = new Limiter(
        new RedisStore({ client: clients.cluster, prefix: `${prefix}rl:`, coalesce }),
        {
          name: pass.policy('fixed-window'),
          algorithm: 'fixed-window',
          limit: pass.limit('fixed-window'),
          window: windowMs,
        },
      );
      add(name, 'ours', async (i) => check(await onCluster.consume(ipKeys[i]!)), 'cluster');
    }
  }
  return list;
}
