import { Limiter, MemoryStore } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { backends, TestClock } from '../support/backends';

// A caller key's state under one limit can empty and be written again while a spend still weighs
// on its other limits: the short limit's state goes when it drains (or a refund empties it), the
// next spend writes a new one. A receipt of the earlier spend still settles on the other limits.
// (MemoryStore took the new state as a sign that the key's count was forgotten, as when it is
// pushed out under maxKeys, and settled nothing on any limit; found by model.property.spec.ts.)

const stores = backends('refund-reborn');

describe.each(stores)('$name store', (backend) => {
  describe.each(['token-bucket', 'gcra'] as const)('%s', (algorithm) => {
    const setup = (long: number) => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'reborn',
        algorithm,
        limits: [
          { limit: 10, window: 1_000 },
          { limit: long, window: 10_000 },
        ],
      });
      return { clock, limiter };
    };

    it('a refund gives back on the long limit after the short limit emptied and was written again', async () => {
      const { clock, limiter } = setup(2);
      const first = await limiter.consume('k');
      const second = await limiter.consume('k');
      clock.advance(150);
      // The short limit's bucket empties (0.5 token left, 1 back); the long one keeps 0.97.
      expect(await limiter.refund(second)).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(true); // a new short-limit state
      // The lowest point after `first` was 0.97 token: that much comes back on the long limit.
      expect(await limiter.refund(first)).toBe(true);
      expect(await limiter.consume('k')).toMatchObject({
        allowed: true,
        remaining: 0,
        retryAfterMs: 0,
        resetAfterMs: 10_000,
      });
    });

    it('an adjustment up charges the long limit after the short limit emptied and was written again', async () => {
      const { clock, limiter } = setup(3);
      const first = await limiter.consume('k');
      const second = await limiter.consume('k');
      clock.advance(150);
      expect(await limiter.refund(second)).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(true);
      // 1 → 2: the long limit holds 2.97 tokens of 3.
      await limiter.adjust(first, 2);
      expect(await limiter.consume('k')).toMatchObject({
        allowed: false,
        remaining: 0,
        retryAfterMs: 3_184,
        resetAfterMs: 9_850,
      });
    });
  });
});

describe('MemoryStore on its default clock', () => {
  let now = 0;
  beforeEach(() => {
    now = 1_000_000;
    jest.spyOn(performance, 'now').mockImplementation(() => now);
  });
  afterEach(() => jest.restoreAllMocks());

  it.each(ALGORITHMS)(
    '%s: a refund gives back on the long limit after the short limit expired and was written again',
    async (algorithm) => {
      const limiter = new Limiter(new MemoryStore(), {
        name: 'reborn',
        algorithm,
        limits: [
          { limit: 3, window: 1_000 },
          { limit: 2, window: 60_000 },
        ],
      });
      const first = await limiter.consume('k');
      now += 2_500; // the 1 s limit's state expires (the store forgets it)
      expect((await limiter.consume('k')).allowed).toBe(true); // a new 1 s state; 60 s: full
      expect(await limiter.refund(first)).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(true);
      // The 60 s limit binds: 2 of 2 (the 1 s one holds 2 of 3).
      expect((await limiter.consume('k')).allowed).toBe(false);
    },
  );
});
