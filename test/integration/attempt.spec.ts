import { Limiter, RateLimitedError } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { backends, TestClock } from '../support/backends';

const stores = backends('attempt');

describe.each(stores)('$name store', (backend) => {
  describe.each(ALGORITHMS)('%s attempt()', (algorithm) => {
    const make = (limit: number) =>
      new Limiter(backend.store(new TestClock()), {
        name: 'login',
        algorithm,
        limit,
        window: '15m',
      });

    it('rejects with RateLimitedError when refused, and the body never runs', async () => {
      const limiter = make(1);
      await limiter.consume('k');
      const body = jest.fn<void, []>();
      const error = await limiter.attempt('k', body).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RateLimitedError);
      expect((error as RateLimitedError).retryAfterMs).toBeGreaterThan(0);
      expect((error as RateLimitedError).decision.allowed).toBe(false);
      expect(body).not.toHaveBeenCalled();
    });

    it('returns what the body returns and keeps the cost when nobody refunds', async () => {
      const limiter = make(2);
      expect(await limiter.attempt('k', () => 'done')).toBe('done');
      expect(await limiter.attempt('k', () => Promise.resolve('done'))).toBe('done');
      await expect(limiter.attempt('k', () => 'x')).rejects.toBeInstanceOf(RateLimitedError);
    });

    it('refunds even when the body throws after calling refund()', async () => {
      const limiter = make(1);
      await expect(
        limiter.attempt('k', (attempt) => {
          attempt.refund();
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect((await limiter.consume('k')).allowed).toBe(true);
    });

    it('keeps the cost when the body throws without refunding', async () => {
      const limiter = make(1);
      await expect(
        limiter.attempt('k', () => Promise.reject(new Error('bad password'))),
      ).rejects.toThrow();
      expect((await limiter.consume('k')).allowed).toBe(false);
    });

    it('only failures cost: 40 refunded successes and 10 failures at limit 10, then refused', async () => {
      const limiter = make(10);
      const keys = ['ip:203.0.113.7', 'email:5f4dcc3b5aa765d6'];
      const signIn = (ok: boolean) =>
        limiter.attempt(keys, (attempt) => {
          if (!ok) throw new Error('wrong password');
          attempt.refund();
          return 'user';
        });
      for (let i = 0; i < 40; i++) expect(await signIn(true)).toBe('user');
      for (let i = 0; i < 10; i++) await expect(signIn(false)).rejects.toThrow('wrong password');
      await expect(signIn(true)).rejects.toBeInstanceOf(RateLimitedError);
    });

    it('begin() + settle() refunds once, whatever the number of settle calls', async () => {
      const limiter = make(2);
      const attempt = await limiter.begin('k');
      await limiter.consume('k');
      attempt.refund();
      await Promise.all([attempt.settle(), attempt.settle()]);
      await attempt.settle();
      expect(attempt.settled).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
      expect(() => attempt.refund()).toThrow(/settled/);
    });

    it('reports a refund that cannot be applied instead of failing the body’s result', async () => {
      const store = backend.store(new TestClock());
      const errors: unknown[] = [];
      const limiter = new Limiter(
        { ...bind(store), refund: () => Promise.reject(new Error('store down')) },
        { name: 'login', algorithm, limit: 1, window: '15m' },
        { onSettleError: (error) => errors.push(error) },
      );
      const result = await limiter.attempt('k', (attempt) => {
        attempt.refund();
        return 'user';
      });
      expect(result).toBe('user');
      expect(errors).toHaveLength(1);
    });
  });
});

function bind<T extends object>(store: T): T {
  const proto = Object.getPrototypeOf(store) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const name of ['consume', 'peek', 'refund', 'reset']) {
    out[name] = (proto[name] as (...a: unknown[]) => unknown).bind(store);
  }
  return out as T;
}
