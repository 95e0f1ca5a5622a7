import { Cluster } from 'ioredis';
import { type Algorithm, type Decision, Limiter, RedisStore } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { storageKey } from '../../lib/stores/storage-key.util';
import { clusterSlot } from '../../lib/stores/cluster-slot.util';
import { startRedisCluster, type StartedRedisCluster } from '../support/cluster';
import { clusterNodes } from '../support/cluster-handle';
import { TestClock } from '../support/backends';
import { uniquePrefix } from '../support/redis';

const nodes = clusterNodes();
const describeOnCluster = nodes ? describe : describe.skip;
const IP = 'ip:203.0.113.7';
const EMAIL = 'email:5f4dcc3b5aa765d6';

describeOnCluster('Redis Cluster: keys of one call in different slots', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = new Cluster(nodes!, { redisOptions: { maxRetriesPerRequest: 2 } });
    await new Promise((resolve) => cluster.once('ready', resolve));
  });
  afterAll(() => cluster.quit());

  const make = (algorithm: (typeof ALGORITHMS)[number], limit: number, clock?: TestClock) => {
    const store = new RedisStore({
      client: cluster,
      prefix: uniquePrefix('cluster'),
      clock: clock?.read,
    });
    const limiter = new Limiter(store, { name: 'login', algorithm, limit, window: '1h' });
    return { store, limiter };
  };

  it('the sign-in keys really live in different slots', () => {
    const { store } = make('fixed-window', 1);
    expect(clusterSlot(storageKey(store.prefix, IP, 'login', 0))).not.toBe(
      clusterSlot(storageKey(store.prefix, EMAIL, 'login', 0)),
    );
  });

  it('computes slots as Redis does', async () => {
    for (const key of [
      IP,
      EMAIL,
      'rl:{ip:1.2.3.4}:x:0',
      'no tag',
      '{}empty',
      'a{b}c{d}',
      'ünïcode',
    ]) {
      expect(clusterSlot(key)).toBe(await cluster.cluster('KEYSLOT', key));
    }
  });

  describe.each(ALGORITHMS)('%s', (algorithm) => {
    it('a refusal by a later slot group refunds the earlier groups', async () => {
      const clock = new TestClock();
      const { store, limiter } = make(algorithm, 2, clock);
      const [first, second] = [IP, EMAIL].sort(
        (a, b) =>
          clusterSlot(storageKey(store.prefix, a, 'login', 0)) -
          clusterSlot(storageKey(store.prefix, b, 'login', 0)),
      );
      await limiter.consume(second!, { cost: 2 }); // the group spent second is exhausted
      const refused = await limiter.consume([first!, second!]);
      expect(refused.allowed).toBe(false);
      expect(refused.blockedBy?.key).toBe(second);
      expect(refused.retryAfterMs).toBe((await limiter.peek(second!)).retryAfterMs);
      // The first group was charged, then refunded: nothing lasting.
      expect((await limiter.peek(first!, { cost: 2 })).allowed).toBe(true);
      expect((await limiter.consume(first!, { cost: 2 })).allowed).toBe(true);
    });

    it('50 concurrent two-slot consumes at limit 5: at most 5 per key, and refusals leave no charge', async () => {
      const { limiter } = make(algorithm, 5);
      const decisions = await Promise.all(
        Array.from({ length: 50 }, () => limiter.consume([IP, EMAIL])),
      );
      const allowed = decisions.filter((d) => d.allowed).length;
      expect(allowed).toBeGreaterThanOrEqual(1);
      expect(allowed).toBeLessThanOrEqual(5);
      // Whatever was refused (even spuriously, under contention) was given back in full.
      for (const key of [IP, EMAIL]) {
        const left = await limiter.peek(key);
        expect(left.allowed ? left.remaining + 1 : left.remaining).toBe(5 - allowed);
      }
    });

    it('refunds a cross-slot spend on every key, each to its own instant', async () => {
      const clock = new TestClock();
      const { limiter } = make(algorithm, 1, clock);
      const spent = await limiter.consume([IP, EMAIL]);
      expect(spent.receipt.atByKey).toHaveLength(2);
      await limiter.refund(spent);
      expect((await limiter.consume([IP, EMAIL])).allowed).toBe(true);
    });
  });

  it.each(['}attacker', '{x}', 'a{b', '{', 'b}'])(
    'a caller key with braces (%s) keeps all its limits in one slot',
    async (key) => {
      const store = new RedisStore({ client: cluster, prefix: uniquePrefix('braces') });
      const limiter = new Limiter(
        store,
        {
          name: 'multi',
          algorithm: 'fixed-window',
          limits: [
            { limit: 1, window: '1m' },
            { limit: 10, window: '1h' },
          ],
          failMode: 'open',
        },
        {
          onStoreFailure: (failure) => {
            throw failure.error;
          },
        },
      );
      expect((await limiter.consume(key)).allowed).toBe(true);
      const refused = await limiter.consume(key);
      expect(refused.failure).toBeUndefined();
      expect(refused.allowed).toBe(false);
    },
  );

  it('decides a single-slot call in one script run, a two-slot call in two', async () => {
    // Counted on this client (other suites share the cluster's command statistics).
    let calls = 0;
    const counting = new Proxy(cluster, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (prop !== 'call' || typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (args[0] === 'fcall') calls++;
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      },
    });
    const store = new RedisStore({ client: counting, prefix: uniquePrefix('runs') });
    const limiter = new Limiter(store, {
      name: 'login',
      algorithm: 'sliding-window',
      limit: 10,
      window: '1h',
    });
    await limiter.consume([IP, EMAIL]); // the library loaded on every master involved
    const before = calls;
    await limiter.consume(IP);
    const single = calls;
    await limiter.consume([IP, EMAIL]);
    const double = calls;
    expect(single - before).toBe(1);
    expect(double - single).toBe(2);
  });

  it.each([
    [true, 4], // the first alone, then the other 39 in batches of at most 16
    [false, 40],
  ])(
    'coalesce %s: 40 concurrent decisions on one slot take %i script runs and admit exactly the limit; other slots go their own way',
    async (coalesce, runs) => {
      let slotRuns = 0;
      const prefix = uniquePrefix('coalesce');
      const hot = storageKey(prefix, IP, 'login', 0);
      const counting = new Proxy(cluster, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver) as unknown;
          if (prop !== 'call' || typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            const [command, argv] = args as [string, unknown[]];
            if (command === 'fcall' && clusterSlot(String(argv[2])) === clusterSlot(hot)) {
              slotRuns++;
            }
            return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          };
        },
      });
      const store = new RedisStore({ client: counting, prefix, coalesce });
      const limiter = new Limiter(store, {
        name: 'login',
        algorithm: 'fixed-window',
        limit: 25,
        window: '1h',
      });
      await limiter.peek(EMAIL); // the library loaded, the clock measured
      const others = Array.from({ length: 20 }, (_, i) => `other:${i}`);
      const decisions = await Promise.all([
        ...Array.from({ length: 40 }, () => limiter.consume(IP)),
        ...others.map((key) => limiter.consume(key)),
      ]);
      expect(slotRuns).toBe(runs);
      const hotDecisions = decisions.slice(0, 40);
      expect(hotDecisions.filter((d) => d.failure)).toEqual([]);
      // In issue order: the first 25 were admitted, the rest refused.
      expect(hotDecisions.map((d) => d.allowed)).toEqual(
        Array.from({ length: 40 }, (_, i) => i < 25),
      );
      expect(decisions.slice(40).every((d) => d.allowed && !d.failure)).toBe(true);
    },
  );

  it('reset deletes across slots', async () => {
    const { limiter } = make('fixed-window', 1);
    await limiter.consume([IP, EMAIL]);
    await limiter.reset([IP, EMAIL]);
    expect((await limiter.consume([IP, EMAIL])).allowed).toBe(true);
  });
});

describeOnCluster('Redis Cluster failover', () => {
  let own: StartedRedisCluster;
  beforeAll(async () => {
    own = await startRedisCluster();
  }, 60_000);
  afterAll(() => own.stop());

  it('keeps deciding while a master is killed and its replica promoted; no key ends up over its limit', async () => {
    const client = await own.createClient({
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
    });
    const limiter = new Limiter(
      new RedisStore({ client, prefix: 'failover:' }),
      { name: 'p', algorithm: 'fixed-window', limit: 20, window: '1h' },
      { timeoutMs: 500, failMode: 'closed', onStoreFailure: () => undefined },
    );
    const keys = Array.from({ length: 8 }, (_, i) => `user:${i}`);
    const decisions: Decision[] = [];
    const victim = await own.masterForKey(storageKey('failover:', keys[0]!, 'p', 0));
    let killed = false;
    const traffic = (async () => {
      for (let round = 0; round < 60; round++) {
        decisions.push(...(await Promise.all(keys.map((key) => limiter.consume(key)))));
        if (round === 10 && !killed) {
          killed = true;
          void own.killNode(victim.port);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    await traffic;
    await own.waitForHealthy();
    const failures = decisions.filter((d) => d.failure).length;
    const allowedByKey = new Map<string, number>();
    for (const d of decisions) {
      if (d.allowed)
        allowedByKey.set(d.receipt.keys[0]!, (allowedByKey.get(d.receipt.keys[0]!) ?? 0) + 1);
    }
    for (const key of keys) expect(allowedByKey.get(key) ?? 0).toBeLessThanOrEqual(20);
    // After the promotion the limiter decides again, without a restart.
    const after = await limiter.consume('user:fresh');
    expect(after.failure).toBeUndefined();
    expect(after.allowed).toBe(true);
    // The kill landed mid-traffic: some decisions met the switchover, and followed failMode.
    expect(failures).toBeGreaterThan(0);
    expect(decisions.filter((d) => d.failure).every((d) => !d.allowed)).toBe(true);
    expect(failures).toBeLessThan(decisions.length / 4); // and the rest kept being decided
    await client.quit();
  }, 60_000);
});

describeOnCluster(
  'Redis Cluster: a compensated refusal costs nothing, whatever runs in between',
  () => {
    let victimClient: Cluster;
    let otherClient: Cluster;
    beforeAll(async () => {
      const connect = async () => {
        const client = new Cluster(nodes!, { redisOptions: { maxRetriesPerRequest: 2 } });
        await new Promise((resolve) => client.once('ready', resolve));
        return client;
      };
      victimClient = await connect();
      otherClient = await connect();
    });
    afterAll(async () => {
      await victimClient.quit();
      await otherClient.quit();
    });

    /**
     * The victim's client, with a hook: `between()` runs after its first slot group answered and
     * before its second is sent (other processes at work on the same keys meanwhile).
     */
    function interleaved(between: () => Promise<unknown>, client = victimClient): Cluster {
      let groups = 0;
      return new Proxy(client, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver) as unknown;
          if (prop !== 'call' || typeof value !== 'function') return value;
          return async (...args: unknown[]) => {
            const [command, argv] = args as [string, unknown[]];
            const stack = command === 'fcall' && String(argv[0]).endsWith('_stack_consume');
            if (stack && groups++ === 1) await between();
            return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          };
        },
      });
    }

    /**
     * A key pair in slot order, and a process (`other`) sharing the victim's prefix next to a
     * control process on a prefix of its own: the control does what `other` does, without the
     * victim's refused call. The first key has a busy period whose lowest point is low, and more
     * backlog since; the later key is exhausted, so the victim's call is refused there.
     */
    async function setup(algorithm: Algorithm) {
      const clock = new TestClock();
      const prefix = uniquePrefix('between');
      const policy = { name: 'p', algorithm, limit: 10, window: 1_000 };
      const on = (client: Cluster, at: string) =>
        new Limiter(new RedisStore({ client, prefix: at, clock: clock.read }), policy);
      const other = on(otherClient, prefix);
      const control = on(otherClient, uniquePrefix('control'));
      const slot = (key: string) => clusterSlot(storageKey(prefix, key, 'p', 0));
      const [first, later] = [IP, EMAIL].sort((a, b) => slot(a) - slot(b)) as [string, string];
      for (const limiter of [other, control]) {
        await limiter.consume(first);
        await limiter.consume(later, { cost: 10 });
      }
      clock.advance(99);
      for (const limiter of [other, control]) await limiter.consume(first);
      /** `later` left with no room, so the next cross-slot call is refused there. */
      const exhaust = async () => {
        while ((await other.consume(later)).allowed);
      };
      const victim = (between: () => Promise<unknown>) =>
        on(
          interleaved(async () => {
            await between();
            await exhaust();
          }),
          prefix,
        ).consume([first, later], { cost: 3 });
      /** Another process's cross-slot call, refused by `later`, with its own `between`. */
      const crossing = async (between: () => Promise<unknown>) => {
        await exhaust();
        return on(interleaved(between, otherClient), prefix).consume([first, later], { cost: 2 });
      };
      const same = async () =>
        expect(await other.peek(first, { cost: 1 })).toEqual({
          ...(await control.peek(first, { cost: 1 })),
          receipt: expect.anything() as unknown,
        });
      return { clock, other, control, first, later, victim, crossing, same };
    }

    // Gaps of 1 ms leave the victim's units whole; 150 ms drain part of them first.
    const cases = ALGORITHMS.flatMap((algorithm) =>
      [1, 150].map((gap) => [algorithm, gap] as const),
    );

    it.each(cases)(
      '%s: another process spends on the first slot group between the victim’s two groups (gaps of %i ms)',
      async (algorithm, gap) => {
        const { clock, other, control, first, victim, same } = await setup(algorithm);
        const refused = await victim(async () => {
          clock.advance(gap);
          await other.consume(first);
        });
        expect(refused.allowed).toBe(false);
        await control.consume(first); // what `other` did, at the same instant
        await same();
      },
    );

    it.each(cases)(
      '%s: another cross-slot call is charged and compensated in between, and spends follow (gaps of %i ms)',
      async (algorithm, gap) => {
        const { clock, other, control, first, victim, crossing, same } = await setup(algorithm);
        const refused = await victim(async () => {
          clock.advance(gap);
          expect((await crossing(() => Promise.resolve())).allowed).toBe(false);
          clock.advance(gap);
          await other.consume(first, { cost: 2 });
        });
        expect(refused.allowed).toBe(false);
        await control.consume(first, { cost: 2 }); // at the same instant as `other`'s spend
        await same();
      },
    );

    it.each(cases)(
      '%s: another cross-slot call is pending in between, with a spend inside it (gaps of %i ms)',
      async (algorithm, gap) => {
        const { clock, other, control, first, victim, crossing, same } = await setup(algorithm);
        const refused = await victim(async () => {
          clock.advance(gap);
          const its = await crossing(async () => {
            clock.advance(gap);
            await other.consume(first);
          });
          expect(its.allowed).toBe(false);
        });
        expect(refused.allowed).toBe(false);
        await control.consume(first); // the spend inside both calls, at the same instant
        await same();
      },
    );

    it('a bucket keeps at most 16 cross-slot spends open to compensation, until their deadline', async () => {
      const clock = new TestClock();
      const store = new RedisStore({
        client: otherClient,
        prefix: uniquePrefix('cap'),
        clock: clock.read,
      });
      const limiter = new Limiter(
        store,
        { name: 'p', algorithm: 'token-bucket', limit: 1_000, window: 1_000 },
        { timeoutMs: 500 },
      );
      const slot = (key: string) => clusterSlot(storageKey(store.prefix, key, 'p', 0));
      const [first, later] = [IP, EMAIL].sort((a, b) => slot(a) - slot(b)) as [string, string];
      const open = async () => {
        const raw = (await otherClient.get(storageKey(store.prefix, first, 'p', 0))) ?? '';
        return raw.split(':')[7]?.split(',').length ?? 0;
      };
      for (let i = 0; i < 20; i++) {
        expect((await limiter.consume([first, later])).allowed).toBe(true);
      }
      expect(await open()).toBe(16);
      clock.advance(500 + 1_000 + 1); // past their deadline and the grace
      await limiter.consume(first);
      expect(await open()).toBe(0);
    });
  },
);
