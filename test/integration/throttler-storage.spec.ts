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

    it('named throttlers and settings keep separate counts', async () => {
      await storage.increment('k', 60_000, 1, 60_000, 'short');
      expect((await storage.increment('k', 60_000, 1, 60_000, 'short')).isBlocked).toBe(true);
      expect((await storage.increment('k', 60_000, 1, 60_000, 'long')).isBlocked).toBe(false);
      expect((await storage.increment('k', 60_000, 5, 60_000, 'short')).isBlocked).toBe(false);
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
