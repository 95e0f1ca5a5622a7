/**
 * node-redis (`redis` on npm) as RedisStore's client, beyond the shared suites that run on it
 * through backends(…, { nodeRedis: true }) (and coalescing.spec.ts): what depends on the client
 * itself — scripts and their recovery, deadlines on a frozen server and late replies, the clock
 * probe, the offline queue, a Cluster's masters — on node-redis v5, and the basics on v4.
 */
import Redis from 'ioredis';
import { createClient, createClientPool, createSentinel } from 'redis';
import { createClient as createClientV4, createCluster as createClusterV4 } from 'redis-v4';
import {
  type Algorithm,
  type Decision,
  Limiter,
  RedisStore,
  type SpendRequest,
  StoreTimeoutError,
} from '../../lib';
import { monotonicNow } from '../../lib/core/clock.util';
import { resolvePolicy } from '../../lib/core/policy';
import { RedlimitThrottlerStorage } from '../../lib/nest';
import { clusterNodes } from '../support/cluster-handle';
import { type FreezableRedis, startFreezableRedis } from '../support/freezable-redis';
import {
  connectNodeRedis,
  connectNodeRedisCluster,
  type NodeRedisClient,
} from '../support/node-redis';
import {
  redisUrl,
  startRedisServer,
  type StartedRedisServer,
  uniquePrefix,
} from '../support/redis';
import { spawnRedisServer } from '../support/redis-server';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const nodes = clusterNodes();
const onCluster = nodes ? describe : describe.skip;

/** Units the stored fixed-window counters of `prefix` hold, summed. */
async function storedCount(admin: Redis, prefix: string): Promise<number> {
  // (outcome markers, `{…}!<spend id>`, hold instants, not units)
  const keys = (await admin.keys(`${prefix}*`)).filter((k) => !k.includes('}!'));
  const values = keys.length ? await admin.mget(...keys) : [];
  return values.reduce((sum, v) => sum + Number(v ?? 0), 0);
}

/** Script commands the server ran since the last CONFIG RESETSTAT, by name. */
async function scriptCommands(admin: Redis): Promise<Record<string, number>> {
  const info = await admin.info('commandstats');
  const calls: Record<string, number> = {};
  for (const m of info.matchAll(/^cmdstat_(evalsha|eval|fcall|function\|load):calls=(\d+)/gm))
    calls[m[1]!] = Number(m[2]);
  return calls;
}

/** A spend of 1 on 'k' at 5 per hour whose caller waits 100 ms from now. */
function spendRequest(algorithm: Algorithm): SpendRequest {
  const { limits } = resolvePolicy({ name: 'p', algorithm, limit: 5, window: '1h' });
  return { policy: 'p', algorithm, limits, keys: ['k'], cost: 1, deadlineAt: monotonicNow() + 100 };
}

const fixedWindow = (limit: number) =>
  ({ name: 'p', algorithm: 'fixed-window', limit, window: '1h' }) as const;

describe('node-redis client on the shared Redis', () => {
  let client: NodeRedisClient;
  beforeAll(async () => {
    client = await connectNodeRedis(redisUrl());
  });
  afterAll(() => client.close());

  it('decides and refunds on a createClient() client', async () => {
    const limiter = new Limiter(new RedisStore({ client, prefix: uniquePrefix('node-redis') }), {
      name: 'p',
      algorithm: 'fixed-window',
      limit: 2,
      window: '1m',
    });
    const first = await limiter.consume('k');
    expect(first.allowed).toBe(true);
    expect(await limiter.refund(first)).toBe(true);
    expect((await limiter.consume('k')).remaining).toBe(1);
  });

  it('admits exactly 5 of 50 concurrent consumes at limit 5 (coalesced)', async () => {
    const limiter = new Limiter(
      new RedisStore({ client, prefix: uniquePrefix('node-redis') }),
      fixedWindow(5),
    );
    const decisions = await Promise.all(Array.from({ length: 50 }, () => limiter.consume('k')));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
  });

  it('RedlimitThrottlerStorage takes the client: exactly the limit of 20 concurrent hits', async () => {
    const storage = new RedlimitThrottlerStorage({
      client,
      prefix: uniquePrefix('node-redis-throttler'),
    });
    const hits = await Promise.all(
      Array.from({ length: 20 }, () => storage.increment('k', 60_000, 5, 0, 'default')),
    );
    expect(hits.filter((hit) => !hit.isBlocked)).toHaveLength(5);
  });

  it.each(['fixed-window', 'token-bucket', 'sliding-log'] as const)(
    '%s: a spend that ran in time but whose reply came after timeoutMs is refunded',
    async (algorithm) => {
      const policy = { name: 'p', algorithm, limit: 2, window: '1h' } as const;
      const store = new RedisStore({ client, prefix: uniquePrefix('node-redis-late') });
      await new Limiter(store, policy).peek('k'); // the library loaded, the clock measured
      const limiter = new Limiter(store, policy, { timeoutMs: 100, onStoreFailure: () => {} });
      const pending = limiter.consume('k');
      // The command is written once this turn is over; Redis runs it at once, and its reply
      // waits in the socket while this process is busy past the deadline. The next turn fires
      // the deadline's timer before it reads the reply.
      await new Promise((resolve) => setImmediate(resolve));
      const busyUntil = performance.now() + 300;
      while (performance.now() < busyUntil);
      expect((await pending).failure?.reason).toBe('timeout');
      await sleep(50); // the late reply is refunded
      expect((await new Limiter(store, policy).peek('k', { cost: 2 })).allowed).toBe(true);
    },
  );
});

describe('node-redis client on a server of its own', () => {
  let server: StartedRedisServer;
  let admin: Redis;
  let client: NodeRedisClient;
  beforeAll(async () => {
    server = await startRedisServer();
    admin = new Redis(server.url);
    client = await connectNodeRedis(server.url);
  });
  afterAll(async () => {
    await client.close();
    admin.disconnect();
    await server.stop();
  });

  it.each(['SCRIPT', 'FUNCTION'])(
    '%s FLUSH during traffic: no error reaches a caller, and nothing is spent twice',
    async (what) => {
      const limiter = new Limiter(
        new RedisStore({ client, prefix: `flush-${what}:` }),
        fixedWindow(150),
      );
      const decisions: Decision[] = [];
      for (let batch = 0; batch < 4; batch++) {
        const burst = Array.from({ length: 50 }, (_, i) => limiter.consume(`k${i % 5}`));
        await admin.call(what, 'FLUSH');
        decisions.push(...(await Promise.all(burst)));
      }
      expect(decisions.filter((d) => d.failure)).toEqual([]);
      expect(decisions.every((d) => d.allowed)).toBe(true);
      expect(await storedCount(admin, `flush-${what}:`)).toBe(200);
    },
  );

  it('where functions are not permitted, runs as scripts and recovers from a script flush once', async () => {
    const user = 'noscripts';
    await admin.acl('SETUSER', user, 'on', 'nopass', '~*', '&*', '+@all', '-function', '-fcall');
    const restricted = createClient({ url: server.url, username: user, password: 'any' });
    restricted.on('error', () => undefined);
    await restricted.connect();
    try {
      const limiter = new Limiter(new RedisStore({ client: restricted, prefix: 'acl:' }), {
        name: 'p',
        algorithm: 'gcra',
        limit: 3,
        window: '1h',
      });
      await limiter.consume('k'); // FCALL refused by the ACL: scripts from then on
      await admin.config('RESETSTAT');
      await limiter.consume('k');
      expect(await scriptCommands(admin)).toEqual({ evalsha: 1 });
      await admin.script('FLUSH');
      await admin.config('RESETSTAT');
      const decision = await limiter.consume('k');
      expect(await scriptCommands(admin)).toEqual({ evalsha: 1, eval: 1 }); // NOSCRIPT, then EVAL
      expect(decision.allowed).toBe(true);
      expect(decision.remaining).toBe(0); // 3 spends, each counted once
      expect((await limiter.consume('k')).allowed).toBe(false);
    } finally {
      await restricted.close();
      await admin.acl('DELUSER', user);
    }
  });
});

describe('node-redis client: a spend that reaches Redis after its deadline writes nothing', () => {
  let redis: FreezableRedis;
  let client: NodeRedisClient;
  beforeAll(async () => {
    redis = await startFreezableRedis();
    client = await connectNodeRedis(redis.server.url);
  });
  afterAll(async () => {
    client.destroy();
    await redis.stop();
  });

  it.each(['fixed-window', 'sliding-window', 'gcra'] as const)(
    '%s: a command held up by a frozen Redis',
    async (algorithm) => {
      const store = new RedisStore({ client, prefix: `phantom:${algorithm}:` });
      const request = spendRequest(algorithm);
      await store.peek(request); // scripts loaded, clock measured
      const late = await redis.whileHung(async () => {
        const pending = store.consume(request).catch((error: unknown) => error);
        await sleep(300); // the caller gave up after 100 ms
        return { pending };
      });
      const outcome = await late.pending;
      expect(outcome).toBeInstanceOf(StoreTimeoutError);
      expect((outcome as Error).message).toMatch(/after its deadline and wrote nothing/);
      expect(await redis.client.keys('phantom:*')).toEqual([]);
    },
  );

  it('the first spend of a fresh store (its clock probe held up) while Redis is frozen', async () => {
    const store = new RedisStore({ client, prefix: 'fresh:' }); // clock not measured yet
    const late = await redis.whileHung(async () => {
      const pending = store.consume(spendRequest('fixed-window')).catch((e: unknown) => e);
      await sleep(300);
      return { pending };
    });
    expect(await late.pending).toBeInstanceOf(StoreTimeoutError);
    expect(await redis.client.keys('fresh:*')).toEqual([]);
  });

  it('a command replayed from the offline queue after Redis restarted', async () => {
    const own = await startRedisServer();
    const port = own.port;
    // node-redis queues commands while it reconnects, and sends them once it is back.
    const queued = await connectNodeRedis(own.url);
    const store = new RedisStore({ client: queued, prefix: 'replay:' });
    const request = spendRequest('fixed-window');
    let restarted: { url: string; stop(): Promise<void> } | undefined;
    try {
      await store.peek(request); // clock measured
      await own.stop();
      // Sent only once the client knows the connection is gone, so it is queued for the replay
      // (sent on a socket the client still took for open, it fails at once: not this case).
      for (let waited = 0; queued.isReady && waited < 5000; waited += 10) await sleep(10);
      expect(queued.isReady).toBe(false);
      const replayed = store.consume(request).catch((error: unknown) => error);
      await sleep(300); // long past the caller's 100 ms
      restarted = await spawnRedisServer([], { pickPort: () => Promise.resolve(port) });
      const outcome = await replayed; // sent once the client reconnects
      expect(outcome).toBeInstanceOf(StoreTimeoutError);
      expect((outcome as Error).message).toMatch(/after its deadline and wrote nothing/);
      const check = new Redis(restarted.url);
      expect(await check.keys('replay:*')).toEqual([]);
      check.disconnect();
    } finally {
      queued.destroy();
      await restarted?.stop();
    }
  });
});

onCluster('node-redis Cluster client', () => {
  it.each(['fixed-window', 'gcra', 'sliding-log'] as const)(
    '%s: 50 concurrent two-slot consumes at limit 5: at most 5 per key, refusals leave no charge',
    async (algorithm) => {
      const cluster = await connectNodeRedisCluster(nodes!);
      try {
        const store = new RedisStore({ client: cluster, prefix: uniquePrefix('nr-contention') });
        const limiter = new Limiter(store, { name: 'login', algorithm, limit: 5, window: '1h' });
        const keys = ['ip:203.0.113.7', 'email:5f4dcc3b5aa765d6']; // two slots
        const decisions = await Promise.all(
          Array.from({ length: 50 }, () => limiter.consume(keys)),
        );
        const allowed = decisions.filter((d) => d.allowed).length;
        expect(allowed).toBeGreaterThanOrEqual(1);
        expect(allowed).toBeLessThanOrEqual(5);
        for (const key of keys) {
          const left = await limiter.peek(key);
          expect(left.allowed ? left.remaining + 1 : left.remaining).toBe(5 - allowed);
        }
      } finally {
        await cluster.close();
      }
    },
  );

  it('loads the function library on every master after FUNCTION FLUSH, and decides across slots', async () => {
    const cluster = await connectNodeRedisCluster(nodes!);
    try {
      const prefix = uniquePrefix('node-redis-cluster');
      const limiter = new Limiter(new RedisStore({ client: cluster, prefix }), fixedWindow(1));
      // Keys in many slots, so every master serves some.
      const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
      await limiter.peek(keys);
      await Promise.all(
        cluster.masters.map(async (node) => (await cluster.nodeClient(node)).functionFlush()),
      );
      const decision = await limiter.consume(keys);
      expect(decision.failure).toBeUndefined();
      expect(decision.allowed).toBe(true);
      const libraries = await Promise.all(
        cluster.masters.map(async (node) =>
          (await cluster.nodeClient(node)).sendCommand(['FUNCTION', 'LIST']),
        ),
      );
      for (const listed of libraries) expect(listed).toHaveLength(1);
      // Refused as a whole: the slot groups charged before the refusing one are refunded.
      const fresh = Array.from({ length: 12 }, (_, i) => `fresh${i}`);
      expect((await limiter.consume([...fresh, 'k11'])).allowed).toBe(false);
      expect((await limiter.consume(fresh)).allowed).toBe(true);
    } finally {
      await cluster.close();
    }
  });
});

describe('node-redis v4', () => {
  it('decides, refunds and reloads the library after FUNCTION FLUSH on createClient()', async () => {
    const server = await startRedisServer();
    const client = createClientV4({ url: server.url });
    client.on('error', () => undefined);
    await client.connect();
    try {
      const limiter = new Limiter(new RedisStore({ client, prefix: 'v4:' }), fixedWindow(2));
      const first = await limiter.consume(['a', 'b']);
      expect(first.allowed).toBe(true);
      expect(await limiter.refund(first)).toBe(true);
      await client.sendCommand(['FUNCTION', 'FLUSH']);
      await limiter.consume(['a', 'b']);
      expect((await limiter.consume('a')).remaining).toBe(0);
      expect((await limiter.consume('a')).allowed).toBe(false);
    } finally {
      await client.quit();
      await server.stop();
    }
  });

  (nodes ? it : it.skip)('decides across slots on createCluster()', async () => {
    const cluster = createClusterV4({
      rootNodes: nodes!.map(({ host, port }) => ({ url: `redis://${host}:${port}` })),
    });
    cluster.on('error', () => undefined);
    await cluster.connect();
    try {
      const limiter = new Limiter(
        new RedisStore({ client: cluster, prefix: uniquePrefix('v4-cluster') }),
        fixedWindow(1),
      );
      expect((await limiter.consume(['ip:1', 'email:a'])).allowed).toBe(true);
      expect((await limiter.consume(['ip:2', 'email:a'])).allowed).toBe(false);
      expect((await limiter.consume(['ip:2', 'email:b'])).allowed).toBe(true); // nothing kept
    } finally {
      await cluster.quit();
    }
  });
});

describe('node-redis clients RedisStore does not take', () => {
  it('refuses a client pool and a v4 legacyMode client, saying why (a Sentinel client is taken)', () => {
    const pool = createClientPool({ url: redisUrl() });
    const sentinel = createSentinel({
      name: 'mymaster',
      sentinelRootNodes: [{ host: '127.0.0.1', port: 1 }],
    });
    const legacy = createClientV4({ url: redisUrl(), legacyMode: true });
    const store = (client: unknown) => () =>
      new RedisStore({ client: client as NodeRedisClient, prefix: 'refused:' });
    expect(store(pool)).toThrow(/client pool: redlimit needs one connection/);
    expect(store(sentinel)).not.toThrow(); // see sentinel.node-redis.spec.ts
    expect(store(legacy)).toThrow(/legacyMode; pass its promise client, client\.v4/);
    expect(store({ get: () => undefined })).toThrow(
      /must be an ioredis or iovalkey Redis or Cluster, or a node-redis createClient\(\), createCluster\(\) or createSentinel\(\)/,
    );
  });
});

describe('node-redis is an optional peer', () => {
  afterEach(() => {
    jest.dontMock('redis');
    jest.resetModules();
  });

  it('redlimit and redlimit/nest load, and RedisStore runs on ioredis, without it installed', async () => {
    const admin = new Redis(redisUrl());
    try {
      let lib: typeof import('../../lib') | undefined;
      jest.isolateModules(() => {
        jest.doMock('redis', () => {
          throw new Error("Cannot find module 'redis'");
        });
        lib = jest.requireActual<typeof import('../../lib')>('../../lib');
        jest.requireActual<typeof import('../../lib/nest')>('../../lib/nest');
      });
      const store = new lib!.RedisStore({ client: admin, prefix: uniquePrefix('no-node-redis') });
      const limiter = new lib!.Limiter(store, fixedWindow(1));
      expect((await limiter.consume('k')).allowed).toBe(true);
    } finally {
      admin.disconnect();
    }
  });
});
