import { Limiter, RedisStore, type Store } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { backends, TestClock } from '../support/backends';

const stores = backends('all-or-nothing', { nodeRedis: true });

describe.each(stores)('$name store', (backend) => {
  describe.each(ALGORITHMS)('%s', (algorithm) => {
    const make = (limit: number, store: Store = backend.store(new TestClock()), name = 'p') =>
      new Limiter(store, { name, algorithm, limit, window: '1h' });

    it('refuses the pair when one key is exhausted and leaves the other key untouched', async () => {
      const limiter = make(2);
      await limiter.consume('ip:1');
      await limiter.consume('ip:1');
      const refused = await limiter.consume(['ip:1', 'email:a']);
      expect(refused.allowed).toBe(false);
      expect(refused.blockedBy?.key).toBe('ip:1');
      const email = await limiter.peek('email:a');
      expect(email.remaining).toBe(1); // a peek at cost 1: 2 − 1 would be left, nothing was spent
      expect(email.resetAfterMs).toBeGreaterThan(0);
      expect((await limiter.consume('email:a')).remaining).toBe(1);
    });

    it('charges nothing for refusals: 2 spends, 5 refusals, 1 refund at limit 2 → exactly 1 more', async () => {
      const limiter = make(2);
      const first = await limiter.consume('k');
      await limiter.consume('k');
      for (let i = 0; i < 5; i++) expect((await limiter.consume('k')).allowed).toBe(false);
      await limiter.refund(first);
      expect((await limiter.consume('k')).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
    });

    it('charges cost units on every key', async () => {
      const limiter = make(5);
      const d = await limiter.consume(['a', 'b'], { cost: 3 });
      expect(d.remaining).toBe(2);
      expect((await limiter.consume('a', { cost: 3 })).allowed).toBe(false);
      expect((await limiter.consume('b', { cost: 2 })).allowed).toBe(true);
      expect((await limiter.consume('a', { cost: 2 })).allowed).toBe(true);
    });

    it('keeps limiters with different prefixes or policy names apart', async () => {
      const clock = new TestClock();
      const one = make(1, backend.store(clock));
      const otherPrefix = make(1, backend.store(clock));
      const sameStore = backend.store(clock);
      const login = make(1, sameStore, 'login');
      const signup = make(1, sameStore, 'signup');
      expect((await one.consume('k')).allowed).toBe(true);
      expect((await one.consume('k')).allowed).toBe(false);
      if (backend.name === 'redis') expect((await otherPrefix.consume('k')).allowed).toBe(true);
      expect((await login.consume('k')).allowed).toBe(true);
      expect((await signup.consume('k')).allowed).toBe(true);
      expect((await login.consume('k')).allowed).toBe(false);
    });

    it('keeps keys independent', async () => {
      const limiter = make(1);
      expect((await limiter.consume('a')).allowed).toBe(true);
      expect((await limiter.consume('a')).allowed).toBe(false);
      expect((await limiter.consume('b')).allowed).toBe(true);
    });

    it('charges a key named twice in one call once', async () => {
      const limiter = make(2);
      const d = await limiter.consume(['a', 'a', 'b', 'a']);
      expect(d.allowed).toBe(true);
      expect(d.receipt.keys).toEqual(['a', 'b']);
      expect((await limiter.peek('a')).remaining).toBe(0);
      expect((await limiter.consume('a')).allowed).toBe(true);
    });

    it('checks every limit of a policy in the same decision', async () => {
      const limiter = new Limiter(backend.store(new TestClock()), {
        name: 'tiers',
        algorithm,
        limits: [
          { limit: 3, window: '1m' },
          { limit: 2, window: '1h' },
        ],
      });
      await limiter.consume('a');
      expect((await limiter.consume('a')).remaining).toBe(0);
      const refused = await limiter.consume(['b', 'a']);
      expect(refused.allowed).toBe(false);
      expect(refused.blockedBy).toEqual({ key: 'a', limit: 2, windowMs: 3_600_000 });
      expect((await limiter.peek('b')).remaining).toBe(1);
    });

    it('treats a very long key as its hash, still separately from others', async () => {
      const limiter = make(1);
      const long = 'x'.repeat(10_000);
      expect((await limiter.consume(long)).allowed).toBe(true);
      expect((await limiter.consume(long)).allowed).toBe(false);
      expect((await limiter.consume(`${long}y`)).allowed).toBe(true);
    });

    it('reset unlocks the keys of that policy only', async () => {
      const store = backend.store(new TestClock());
      const login = make(1, store, 'login');
      const other = make(1, store, 'other');
      await login.consume(['a', 'b']);
      await other.consume('a');
      await login.reset('a');
      expect((await login.consume('a')).allowed).toBe(true);
      expect((await login.consume('b')).allowed).toBe(false);
      expect((await other.consume('a')).allowed).toBe(false);
    });
  });
});

describe.each(stores)('$name store: large numbers', (backend) => {
  const counters = ALGORITHMS.filter((a) => a !== 'sliding-log'); // a log keeps one entry per unit
  it.each(counters)('%s counts exactly at a limit of 10^15 per ms-window', async (algorithm) => {
    const limiter = new Limiter(backend.store(new TestClock()), {
      name: 'big',
      algorithm,
      limit: 1e15,
      window: 2,
    });
    const first = await limiter.consume('k', { cost: 1e15 - 1 });
    expect(first.remaining).toBe(1);
    expect((await limiter.consume('k', { cost: 2 })).allowed).toBe(false);
    expect((await limiter.consume('k')).remaining).toBe(0);
  });
});

describe('redis store: one budget however many stores', () => {
  const [redis] = stores;
  it.each(ALGORITHMS)('%s: stores on the same prefix and clock share state', async (algorithm) => {
    const clock = new TestClock();
    const first = redis!.store(clock) as RedisStore;
    const policy = { name: 'shared', algorithm, limit: 2, window: '1m' } as const;
    const a = new Limiter(first, policy);
    await new Promise((resolve) => setTimeout(resolve, 5)); // built at another instant
    const b = new Limiter(
      new RedisStore({ client: redis!.client!, prefix: first.prefix, clock: clock.read }),
      policy,
    );
    await a.consume('k');
    await b.consume('k');
    expect((await a.consume('k')).allowed).toBe(false);
    expect((await b.consume('k')).allowed).toBe(false);
  });
});
