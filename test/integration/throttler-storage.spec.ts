import { Logger } from '@nestjs/common';
import { RedlimitThrottlerStorage, type StoreFailure } from '../../lib/nest';
import { backends, TestClock } from '../support/backends';
import { type FreezableRedis, startFreezableRedis } from '../support/freezable-redis';

const stores = backends('throttler-storage', { nodeRedis: true });

describe.each(stores)(
  '$name store: RedlimitThrottlerStorage (the shape ThrottlerGuard reads)',
  (backend) => {
    let clock: TestClock;
    let storage: RedlimitThrottlerStorage;
    beforeEach(() => {
      clock = new TestClock();
      clock.advance(10_000); // 10 s into a minute
      storage = new RedlimitThrottlerStorage({ store: backend.store(clock) });
    });

    it('counts hits up to the limit, then blocks for blockDuration, with exact seconds', async () => {
      const hit = () => storage.increment('k', 60_000, 2, 120_000, 'default');
      expect(await hit()).toEqual({
        totalHits: 1,
        timeToExpire: 50,
        isBlocked: false,
        timeToBlockExpire: 0,
      });
      expect(await hit()).toEqual({
        totalHits: 2,
        timeToExpire: 50,
        isBlocked: false,
        timeToBlockExpire: 0,
      });
      expect(await hit()).toEqual({
        totalHits: 3,
        timeToExpire: 120,
        isBlocked: true,
        timeToBlockExpire: 120,
      });
      clock.advance(60_000); // a new window, but the block holds
      expect((await hit()).timeToBlockExpire).toBe(60);
      clock.advance(60_000); // the block is over
      expect(await hit()).toEqual({
        totalHits: 1,
        timeToExpire: 50,
        isBlocked: false,
        timeToBlockExpire: 0,
      });
    });

    it('blockDuration 0: refused until the window ends, nothing more', async () => {
      const hit = () => storage.increment('k', 60_000, 1, 0, 'default');
      await hit();
      expect(await hit()).toEqual({
        totalHits: 2,
        timeToExpire: 50,
        isBlocked: true,
        timeToBlockExpire: 50,
      });
      clock.advance(50_000);
      expect((await hit()).isBlocked).toBe(false);
    });

    // @nestjs/throttler's own storage forgets a caller's hits when its block ends, so a block
    // shorter than the ttl lets the caller start over; so does this one (lockout `restart`).
    it('blockDuration shorter than ttl: once the block ends, counting starts over', async () => {
      const hit = () => storage.increment('k', 60_000, 2, 5_000, 'default');
      await hit();
      await hit();
      expect(await hit()).toMatchObject({ isBlocked: true, timeToBlockExpire: 5 });
      clock.advance(5_000);
      expect(await hit()).toMatchObject({ totalHits: 1, isBlocked: false });
    });

    it('a blocked key leaves other keys alone, under the same throttler and the same settings', async () => {
      const hit = (key: string) => storage.increment(key, 60_000, 1, 120_000, 'default');
      await hit('a');
      expect((await hit('a')).isBlocked).toBe(true);
      for (let i = 0; i < 3; i++) {
        clock.advance(20_000);
        expect((await hit('a')).isBlocked).toBe(true);
      }
      expect(await hit('b')).toMatchObject({ totalHits: 1, isBlocked: false });
      expect((await hit('b')).isBlocked).toBe(true);
    });

    it('named throttlers keep separate counts; another limit on the same name and key does not', async () => {
      await storage.increment('k', 60_000, 1, 60_000, 'short');
      expect((await storage.increment('k', 60_000, 1, 60_000, 'short')).isBlocked).toBe(true);
      expect((await storage.increment('k', 60_000, 1, 60_000, 'long')).isBlocked).toBe(false);
      // The key is blocked under 'short': a higher limit of the moment does not lift the block.
      expect((await storage.increment('k', 60_000, 5, 60_000, 'short')).isBlocked).toBe(true);
    });

    // A limit resolved per request (ThrottlerGuard accepts a function) must not mint budgets:
    // @nestjs/throttler's storage keeps one count per (name, key) and compares it with the limit
    // of each call, so alternating 3 and 5 lets 4 of 20 through there.
    it('a limit alternating 3 and 5 on one key: one budget, 4 of 20 through (as @nestjs/throttler)', async () => {
      let allowed = 0;
      for (let i = 0; i < 20; i++) {
        const hit = await storage.increment('k', 60_000, i % 2 ? 5 : 3, 60_000, 'default');
        if (!hit.isBlocked) allowed++;
      }
      expect(allowed).toBe(4);
    });

    it('any mix of limits on one key never lets more through than the highest of them', async () => {
      for (const blockDuration of [0, 60_000]) {
        const limits = Array.from({ length: 60 }, (_, i) => 1 + ((i * 7) % 5)); // 1..5
        let allowed = 0;
        for (const limit of limits) {
          const hit = await storage.increment(
            `k${blockDuration}`,
            60_000,
            limit,
            blockDuration,
            'default',
          );
          if (!hit.isBlocked) allowed++;
        }
        expect(allowed).toBeLessThanOrEqual(5);
        expect(allowed).toBeGreaterThanOrEqual(1);
      }
      // Under the limit of the moment: 3 hits under a limit of 5, then a call at limit 2 is over.
      for (let i = 0; i < 3; i++) {
        expect((await storage.increment('m', 60_000, 5, 0, 'default')).isBlocked).toBe(false);
      }
      expect(await storage.increment('m', 60_000, 2, 0, 'default')).toMatchObject({
        isBlocked: true,
        totalHits: 3,
      });
      expect(await storage.increment('m', 60_000, 5, 0, 'default')).toMatchObject({
        isBlocked: false,
        totalHits: 4,
      });
    });

    it('50 concurrent hits whose limits alternate 3 and 5: at most 5 through', async () => {
      const hits = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          storage.increment('k', 60_000, i % 2 ? 5 : 3, 0, 'default'),
        ),
      );
      const allowed = hits.filter((hit) => !hit.isBlocked).length;
      expect(allowed).toBeGreaterThanOrEqual(3);
      expect(allowed).toBeLessThanOrEqual(5);
    });

    // ThrottlerGuard compares `totalHits > limit`: 0 and negatives refuse every hit, 2.5 admits
    // 2, Infinity admits all. A limit that is not a number is an error naming it.
    it.each([
      [0, 0],
      [-1, 0],
      [0.5, 0],
      [2.5, 2],
      [Infinity, 20],
      [Number.MAX_SAFE_INTEGER, 20],
    ])('limit %p: %p of 20 through, no error', async (limit, expected) => {
      for (const blockDuration of [0, 60_000]) {
        let allowed = 0;
        for (let i = 0; i < 20; i++) {
          const hit = await storage.increment(
            `k${blockDuration}`,
            60_000,
            limit,
            blockDuration,
            'default',
          );
          if (!hit.isBlocked) allowed++;
          else expect(hit.timeToBlockExpire).toBeGreaterThan(0);
        }
        expect(allowed).toBe(expected);
      }
    });

    it.each([
      [[60_000, NaN, 0], /limit must be a number; got NaN/],
      [[60_000, '5', 0], /limit must be a number; got "5"/],
      [[0, 5, 0], /ttl must be a number of ms above 0; got 0/],
      [[NaN, 5, 0], /ttl must be a number of ms above 0; got NaN/],
      [[Infinity, 5, 0], /ttl must be a number of ms above 0; got Infinity/],
      [[60_000, 5, -1], /blockDuration must be a number of ms, 0 or more; got -1/],
      [[60_000, 5, NaN], /blockDuration must be a number of ms, 0 or more; got NaN/],
    ])('increment(k, %j) is refused with an error naming the argument', async (args, message) => {
      const [ttl, limit, blockDuration] = args as [number, number, number];
      await expect(storage.increment('k', ttl, limit, blockDuration, 'default')).rejects.toThrow(
        message,
      );
    });

    // The scenarios of @nestjs/throttler's own ThrottlerStorageService spec that odd limits and
    // blockDuration 0 touch, replayed on this storage.
    it("@nestjs/throttler's storage scenarios: a first hit, no blockDuration, a limit of zero", async () => {
      clock.advance(60_000 - 10_000); // the start of a second, as a fresh record there
      expect(await storage.increment('test', 1000, 1, 0, 'test')).toMatchObject({
        totalHits: 1,
        timeToExpire: 1,
        isBlocked: false,
      });
      const results = [];
      for (let i = 0; i < 5; i++)
        results.push(await storage.increment('no-block', 1000, 2, 0, 'test'));
      expect(results.map((result) => result.isBlocked)).toEqual([false, false, true, true, true]);
      expect(results[2]!.totalHits).toBe(3);
      expect(results[2]!.timeToBlockExpire).toBeGreaterThan(0);
      const zero = await storage.increment('zero', 1000, 0, 0, 'test');
      expect(zero.isBlocked).toBe(true);
      expect(zero.timeToBlockExpire).toBe(1);
    });

    it('limits and ttls that change per call keep the limiters it holds bounded', async () => {
      const held = () => (storage as unknown as { limiters: Map<string, unknown> }).limiters.size;
      for (let i = 1; i <= 2_500; i++) {
        await storage.increment(`k${i % 7}`, 1_000 + (i % 50), i, i % 3 ? 0 : 5_000, 'default');
        expect(held()).toBeLessThanOrEqual(RedlimitThrottlerStorage.MAX_LIMITERS);
      }
      expect(held()).toBe(RedlimitThrottlerStorage.MAX_LIMITERS);
      // Evicted limiters lose nothing: the count lives in the store.
      const hit = () => storage.increment('x', 60_000, 2, 0, 'default');
      expect((await hit()).isBlocked).toBe(false);
      for (let i = 0; i < RedlimitThrottlerStorage.MAX_LIMITERS; i++) {
        await storage.increment('y', 60_000, 10 + i, 0, 'default');
      }
      expect((await hit()).isBlocked).toBe(false);
      expect((await hit()).isBlocked).toBe(true);
    });
  },
);

describe('RedlimitThrottlerStorage options', () => {
  it.each([
    [undefined, /needs options \{ client \} or \{ store \}/],
    [{}, /needs options \{ client \} or \{ store \}/],
    [{ store: {}, ttl: 1 }, /options\.ttl is not an option/],
    [
      { store: { consume: () => 0, refund: () => 0 }, failMode: 'memory' },
      /failMode must be 'closed' or 'open'/,
    ],
  ])('%j is refused', (options, message) => {
    expect(
      () =>
        new RedlimitThrottlerStorage(
          options as unknown as ConstructorParameters<typeof RedlimitThrottlerStorage>[0],
        ),
    ).toThrow(message);
  });
});

describe('RedlimitThrottlerStorage when Redis hangs', () => {
  let redis: FreezableRedis;
  beforeAll(async () => {
    redis = await startFreezableRedis();
  });
  afterAll(() => redis.stop());

  it('closed: the hit is refused and every failure reaches onStoreFailure (open: let through)', async () => {
    const failures: StoreFailure[] = [];
    const closed = new RedlimitThrottlerStorage({
      client: redis.client,
      prefix: `ts-fail:${Math.random()}:`,
      timeoutMs: 300,
      onStoreFailure: (failure) => failures.push(failure),
    });
    const open = new RedlimitThrottlerStorage({
      client: redis.client,
      prefix: `ts-fail:${Math.random()}:`,
      timeoutMs: 300,
      failMode: 'open',
      onStoreFailure: (failure) => failures.push(failure),
    });
    await closed.increment('k', 60_000, 5, 0, 'default'); // warm the connection
    const [refused, allowed] = await redis.whileHung(() =>
      Promise.all([
        closed.increment('k', 60_000, 5, 0, 'default'),
        open.increment('k', 60_000, 5, 0, 'default'),
      ]),
    );
    expect(refused.isBlocked).toBe(true);
    expect(allowed.isBlocked).toBe(false);
    expect(failures.map((f) => [f.reason, f.failMode]).sort()).toEqual([
      ['timeout', 'closed'],
      ['timeout', 'open'],
    ]);
  });

  it('without onStoreFailure, a warning through Nest’s Logger, at most once every 10 s', async () => {
    const warnings: string[] = [];
    const spy = jest
      .spyOn(Logger.prototype, 'warn')
      .mockImplementation((message: unknown) => void warnings.push(String(message)));
    try {
      const storage = new RedlimitThrottlerStorage({
        client: redis.client,
        prefix: `ts-warn:${Math.random()}:`,
        timeoutMs: 300,
      });
      await storage.increment('k', 60_000, 5, 0, 'default');
      await redis.whileHung(() =>
        Promise.all([1, 2, 3].map(() => storage.increment('k', 60_000, 5, 0, 'default'))),
      );
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(
        /RedlimitThrottlerStorage: store timeout, failing closed: hits are refused as over the limit/,
      );
    } finally {
      spy.mockRestore();
    }
  });
});
