import Redis from 'ioredis';
import {
  Limiter,
  RateLimitedError,
  RedisStore,
  type StoreFailure,
  StoreUnavailableError,
} from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { type FreezableRedis, startFreezableRedis } from '../support/freezable-redis';

describe('when Redis hangs or goes away', () => {
  let redis: FreezableRedis;
  let client: Redis;
  beforeAll(async () => {
    redis = await startFreezableRedis();
    client = redis.client;
  });
  afterAll(() => redis.stop());
  const whileHung = <T>(work: () => Promise<T>): Promise<T> => redis.whileHung(work);

  describe.each(ALGORITHMS)('%s', (algorithm) => {
    const make = (failMode: 'open' | 'closed', failures: StoreFailure[] = []) =>
      new Limiter(
        new RedisStore({ client, prefix: `fail:${algorithm}:${failMode}:${Math.random()}:` }),
        { name: 'login', algorithm, limit: 2, window: '1h', failMode },
        { timeoutMs: 400, onStoreFailure: (failure) => failures.push(failure) },
      );

    it('closed: a hung Redis gives a refused decision marked as a store timeout, not a budget refusal', async () => {
      const failures: StoreFailure[] = [];
      const limiter = make('closed', failures);
      await limiter.consume('warm');
      // Only the hung call's failure counts (on a loaded machine the warm-up's first call, which
      // loads the scripts, can outlast the 400 ms deadline too).
      failures.length = 0;
      const decision = await whileHung(() => limiter.consume('k'));
      expect(decision.allowed).toBe(false);
      expect(decision.failure).toMatchObject({ reason: 'timeout', failMode: 'closed' });
      expect(decision.retryAfterMs).toBe(1000);
      expect(decision.receipt.spent).toBe(false);
      expect(failures).toHaveLength(1);
    });

    it('closed: attempt() rejects with StoreUnavailableError and the body never runs', async () => {
      const limiter = make('closed');
      await limiter.consume('warm');
      const body = jest.fn<void, []>();
      const error = await whileHung(() => limiter.attempt('k', body).catch((e: unknown) => e));
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(error).not.toBeInstanceOf(RateLimitedError);
      expect(body).not.toHaveBeenCalled();
    });

    it('open: a hung Redis gives an allowed decision marked as not enforced, and the body runs', async () => {
      const limiter = make('open');
      await limiter.consume('warm');
      const decision = await whileHung(() => limiter.consume('k'));
      expect(decision.allowed).toBe(true);
      expect(decision.failure).toMatchObject({ reason: 'timeout', failMode: 'open' });
      expect(await whileHung(() => limiter.attempt('k', () => 'ran'))).toBe('ran');
    });

    it('a spend whose reply came after the timeout is refunded: no charge the caller was not told of', async () => {
      const limiter = make('closed');
      await limiter.consume('warm');
      const decision = await whileHung(() => limiter.consume('late'));
      expect(decision.failure?.reason).toBe('timeout');
      // Redis wakes up, runs the queued script (a spend) and replies late; the limiter refunds it.
      let state = await limiter.peek('late');
      for (let i = 0; i < 100 && state.remaining !== 1; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        state = await limiter.peek('late');
      }
      expect(state.remaining).toBe(1); // 2 − the peeked unit: nothing left charged
      expect((await limiter.consume('late')).allowed).toBe(true);
      expect((await limiter.consume('late')).allowed).toBe(true);
      expect((await limiter.consume('late')).allowed).toBe(false);
    });
  });

  it('memory: while Redis hangs, the fallback keeps limiting (this process is the whole fleet), then Redis decides again, charged with what the fallback allowed', async () => {
    const failures: StoreFailure[] = [];
    const store = new RedisStore({
      client,
      prefix: `fail:memory:${Math.random()}:`,
      fleetBeatMs: 100,
    });
    const limiter = new Limiter(
      store,
      { name: 'otp', algorithm: 'fixed-window', limit: 2, window: '1h', failMode: 'memory' },
      { timeoutMs: 400, onStoreFailure: (failure) => failures.push(failure) },
    );
    await limiter.consume('warm');
    // A fallback takes a share only once this process has been in the fleet for a beat.
    while (!store.fleet.view?.established) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      await store.heartbeat();
    }
    const [first, second, third, refusedAttempt] = await whileHung(async () => {
      const a = await limiter.consume('k');
      const b = await limiter.consume('k');
      const c = await limiter.consume('k');
      const d = await limiter.attempt('k', () => 'ran').catch((e: unknown) => e);
      return [a, b, c, d] as const;
    });
    expect([first.allowed, second.allowed, third.allowed]).toEqual([true, true, false]);
    expect(third.failure).toMatchObject({ reason: 'timeout', failMode: 'memory' });
    expect(third.retryAfterMs).toBeGreaterThan(0); // a real budget answer, from the fallback
    expect(refusedAttempt).toBeInstanceOf(RateLimitedError); // the budget refused, not the store
    expect(first.receipt.fallback).toBe(true);
    expect(await limiter.refund(first)).toBe(true); // refunds go back to the fallback
    // Redis answers again: what the fallback allowed and kept (second) is charged into it.
    // (Polled with peek: a consume that timed out right after the thaw would be refunded late.)
    let probe = await limiter.peek('k');
    for (let i = 0; i < 50 && probe.failure; i++) probe = await limiter.peek('k');
    await store.heartbeat();
    expect(store.fleet).toMatchObject({ owing: 0, reconciled: 1 });
    const back = await limiter.consume('k');
    expect(back.failure).toBeUndefined();
    expect(back.allowed).toBe(true);
    expect(back.remaining).toBe(0);
    await store.leaveFleet();
  });

  it.each(['closed', 'open'] as const)(
    '%s: a burst of 40 concurrent decisions while Redis hangs: each answers on its own timeout, per fail mode',
    async (failMode) => {
      const limiter = new Limiter(
        new RedisStore({ client, prefix: `fail:burst:${failMode}:${Math.random()}:` }),
        { name: 'p', algorithm: 'sliding-window', limit: 1_000, window: '1h', failMode },
        { timeoutMs: 400, onStoreFailure: () => undefined },
      );
      await limiter.consume('warm');
      const timed = await whileHung(() =>
        Promise.all(
          Array.from({ length: 40 }, async (_, i) => {
            const started = performance.now();
            const decision = await limiter.consume(`k${i % 4}`);
            return { decision, elapsed: performance.now() - started };
          }),
        ),
      );
      for (const { decision, elapsed } of timed) {
        expect(decision.failure).toMatchObject({ reason: 'timeout', failMode });
        expect(decision.allowed).toBe(failMode === 'open');
        expect(elapsed).toBeLessThan(400 + 2_000); // only catches a decision that waited for Redis
      }
    },
  );

  it('an error reply from Redis follows the fail mode too', async () => {
    const broken = new Redis(redis.server.url, {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
    });
    broken.disconnect(); // every command now fails at once
    const failures: StoreFailure[] = [];
    const limiter = new Limiter(
      new RedisStore({ client: broken }),
      { name: 'p', algorithm: 'fixed-window', limit: 1, window: '1m' },
      { onStoreFailure: (f) => failures.push(f) },
    );
    const decision = await limiter.consume('k');
    expect(decision.allowed).toBe(false);
    expect(decision.failure?.reason).toBe('error');
    expect(failures).toHaveLength(1);
  });
});
