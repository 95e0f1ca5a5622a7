import { type Algorithm, Limiter, RedisStore } from '../../lib';
import { backends, TestClock } from '../support/backends';

const stores = backends('algorithms', { nodeRedis: true });
const BUCKETS: Algorithm[] = ['token-bucket', 'gcra'];

describe.each(stores)('$name store', (backend) => {
  /** Capacity 10, one token per second, on a test clock. */
  const capacityTen = (algorithm: Algorithm) => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'r',
      algorithm,
      limit: 60,
      window: '1m',
      burst: 10,
    });
    return { clock, limiter };
  };
  describe.each(BUCKETS)('%s', (algorithm) => {
    it('lets a quiet caller burst `burst`, then holds it to the refill rate', async () => {
      const clock = new TestClock();
      // 10 per minute (one every 6 s), bursts of up to 4.
      const limiter = new Limiter(backend.store(clock), {
        name: 'b',
        algorithm,
        limit: 10,
        window: '1m',
        burst: 4,
      });
      for (let i = 0; i < 4; i++) expect((await limiter.consume('k')).allowed).toBe(true);
      const refused = await limiter.consume('k');
      expect(refused.allowed).toBe(false);
      expect(refused.retryAfterMs).toBe(6_000);
      let admitted = 0;
      for (let second = 1; second <= 60; second++) {
        clock.advance(1_000);
        if ((await limiter.consume('k')).allowed) admitted++;
      }
      expect(admitted).toBe(10); // one per 6 s, never a second burst while busy
    });

    it('rejects a cost larger than burst as bad input', async () => {
      const limiter = new Limiter(backend.store(), {
        name: 'b',
        algorithm,
        limit: 10,
        window: '1m',
        burst: 3,
      });
      await expect(limiter.consume('k', { cost: 4 })).rejects.toThrow(RangeError);
      expect((await limiter.consume('k', { cost: 3 })).allowed).toBe(true);
    });

    it('allows 1 per 7 s at exactly the emission interval forever, and not 1 ms earlier', async () => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'g',
        algorithm,
        limit: 1,
        window: '7s',
        burst: 1,
      });
      const start = clock.now;
      for (let k = 0; k < 300; k++) {
        if (k > 0) {
          clock.now = start + k * 7_000 - 1;
          expect((await limiter.peek('k')).allowed).toBe(false);
        }
        clock.now = start + k * 7_000;
        expect((await limiter.consume('k')).allowed).toBe(true);
      }
    });

    it.each([
      [3, 7_000],
      [3, 2_000],
      [7, 1_000],
    ])(
      'allows %i per %i ms on the millisecond after each emission time, without drift',
      async (limit, window) => {
        // A fractional interval can only be met on whole ms: cell k arrives at ⌈k·window/limit⌉,
        // up to 1 ms late and so sometimes less than an interval after the last. A tolerance of
        // one cell absorbs that; a drifting clock would not be absorbed for 1,000 cells.
        const clock = new TestClock();
        const limiter = new Limiter(backend.store(clock), {
          name: 'g',
          algorithm,
          limit,
          window,
          burst: 2,
        });
        const start = clock.now;
        for (let k = 0; k < 1_000; k++) {
          clock.now = start + Math.ceil((k * window) / limit);
          expect((await limiter.consume('k')).allowed).toBe(true);
        }
        // …and the rate is still the limit: two more at once do not fit.
        expect((await limiter.consume('k', { cost: 2 })).allowed).toBe(false);
      },
    );

    it('refuses a burst beyond the tolerance with the exact Retry-After', async () => {
      const clock = new TestClock();
      // Emission interval 7000 / 3 ms, tolerance 2 cells.
      const limiter = new Limiter(backend.store(clock), {
        name: 'g',
        algorithm,
        limit: 3,
        window: 7_000,
        burst: 2,
      });
      expect((await limiter.consume('k')).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(true);
      const refused = await limiter.consume('k');
      expect(refused.allowed).toBe(false);
      expect(refused.retryAfterMs).toBe(2_334); // ⌈7000 / 3⌉
      expect(refused.resetAfterMs).toBe(4_667); // ⌈2 × 7000 / 3⌉
      clock.advance(2_333);
      expect((await limiter.peek('k')).allowed).toBe(false);
      clock.advance(1);
      expect((await limiter.consume('k')).allowed).toBe(true);
    });

    it('refunds no more than removing the spend from history would', async () => {
      const clock = new TestClock();
      // Capacity 10, one token per second.
      const limiter = new Limiter(backend.store(clock), {
        name: 'r',
        algorithm,
        limit: 60,
        window: '1m',
        burst: 10,
      });
      const a = await limiter.consume('k', { cost: 3 }); // 7 left
      clock.advance(1_000); // 8
      await limiter.consume('k', { cost: 2 }); // 6
      await limiter.refund(a);
      // Without A the bucket would have stayed full, wasted the refill, and B would leave 8; not 9.
      expect((await limiter.peek('k')).remaining).toBe(8 - 1);
    });

    it('gives nothing back once the bucket has been full since the spend', async () => {
      const { clock, limiter } = capacityTen(algorithm);
      const a = await limiter.consume('k', { cost: 2 });
      clock.advance(2_000); // full again
      await limiter.consume('k', { cost: 5 });
      await limiter.refund(a);
      expect((await limiter.peek('k')).remaining).toBe(5 - 1);
    });

    it('gives an immediate refund back exactly', async () => {
      const { clock, limiter } = capacityTen(algorithm);
      await limiter.consume('k', { cost: 4 });
      clock.advance(500);
      const b = await limiter.consume('k', { cost: 3 });
      await limiter.refund(b);
      const after = await limiter.peek('k', { cost: 1 });
      expect(after.remaining).toBe(6 - 1);
      expect(after.resetAfterMs).toBe(4_000 - 500 + 1_000); // backlog of 4 − 0.5 tokens, plus the peeked one
    });
  });

  describe('sliding-log', () => {
    it('counts every one of 1,000 spends in the same millisecond', async () => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'log',
        algorithm: 'sliding-log',
        limit: 1_000,
        window: '1m',
      });
      const decisions = await Promise.all(
        Array.from({ length: 1_000 }, () => limiter.consume('k')),
      );
      expect(decisions.every((d) => d.allowed)).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
      clock.advance(59_999);
      expect((await limiter.peek('k')).allowed).toBe(false);
      clock.advance(1);
      expect((await limiter.peek('k')).allowed).toBe(true);
    });

    it('a refund removes exactly the units that spend added', async () => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'log',
        algorithm: 'sliding-log',
        limit: 5,
        window: '1m',
      });
      const a = await limiter.consume('k', { cost: 3 });
      await limiter.consume('k', { cost: 2 });
      await limiter.refund(a);
      await limiter.refund(a);
      expect((await limiter.consume('k', { cost: 3 })).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
    });
  });

  describe.each(['fixed-window', 'sliding-window', 'token-bucket', 'gcra', 'sliding-log'] as const)(
    '%s with limits [5 per 1 s, 8 per 10 s]',
    (algorithm) => {
      const make = (clock: TestClock) =>
        new Limiter(backend.store(clock), {
          name: 'multi',
          algorithm,
          limits: [
            { limit: 5, window: '1s' },
            { limit: 8, window: '10s' },
          ],
        });

      it('binds on the second limit once the first has refilled', async () => {
        const clock = new TestClock();
        const limiter = make(clock);
        for (let i = 0; i < 5; i++) expect((await limiter.consume('k')).allowed).toBe(true);
        const first = await limiter.consume('k');
        expect(first.allowed).toBe(false);
        expect(first.blockedBy).toMatchObject({ limit: 5, windowMs: 1_000 });
        clock.advance(2_000); // the 1 s limit is whole again
        let admitted = 0;
        let refused;
        for (let i = 0; i < 5; i++) {
          const d = await limiter.consume('k');
          if (d.allowed) admitted++;
          else refused = d;
        }
        expect(admitted).toBeLessThan(5);
        expect(refused?.blockedBy).toMatchObject({ limit: 8, windowMs: 10_000 });
      });

      it('a refusal by either limit writes nothing to the other', async () => {
        const clock = new TestClock();
        const limiter = make(clock);
        for (let i = 0; i < 5; i++) await limiter.consume('k');
        for (let i = 0; i < 10; i++) expect((await limiter.consume('k')).allowed).toBe(false);
        clock.advance(2_000);
        // Had the refusals been charged to the 10 s limit, nothing would be left here.
        expect((await limiter.consume('k', { cost: 3 })).allowed).toBe(true);
      });
    },
  );
});

describe.each(stores)('$name store: a clock that steps back', (backend) => {
  it.each(['fixed-window', 'sliding-window', 'token-bucket', 'gcra', 'sliding-log'] as const)(
    '%s: a 50 ms step back and forth admits no more than the limit',
    async (algorithm) => {
      const clock = new TestClock();
      clock.advance(30 * 60_000); // mid-window
      const limiter = new Limiter(backend.store(clock), {
        name: 'step',
        algorithm,
        limit: 3,
        window: '1h',
      });
      let admitted = 0;
      if ((await limiter.consume('k')).allowed) admitted++;
      clock.advance(-50); // NTP step, or a failover to a node whose clock lags
      if ((await limiter.consume('k')).allowed) admitted++;
      clock.advance(50);
      for (let i = 0; i < 3; i++) if ((await limiter.consume('k')).allowed) admitted++;
      expect(admitted).toBe(3);
    },
  );
});

describe('redis store: peek changes nothing', () => {
  const [redis] = stores;
  it.each(['fixed-window', 'sliding-window', 'token-bucket', 'gcra', 'sliding-log'] as const)(
    '%s: state and TTLs byte-identical before and after',
    async (algorithm) => {
      const clock = new TestClock();
      const store = redis!.store(clock) as RedisStore;
      const limiter = new Limiter(store, { name: 'peek', algorithm, limit: 5, window: '1m' });
      await limiter.consume(['a', 'b'], { cost: 2 });
      clock.advance(1_500);
      const client = redis!.client!;
      // (the spends' outcome markers, `{…}!<spend id>`, are stored state too: a peek leaves them)
      const keys = (await client.keys(`${store.prefix}*`)).sort();
      expect(keys.filter((k) => !k.includes('}!'))).toHaveLength(2);
      const snapshot = async () =>
        Promise.all(
          keys.map(async (key) => [await client.dumpBuffer(key), await client.pexpiretime(key)]),
        );
      const before = await snapshot();
      await limiter.peek(['a', 'b']);
      await limiter.peek(['a', 'b', 'c'], { cost: 5 });
      expect(await snapshot()).toEqual(before);
      expect((await client.keys(`${store.prefix}*`)).sort()).toEqual(keys);
    },
  );
});

describe('redis store: keys live no longer than their state matters (Redis clock)', () => {
  const [redis] = stores;
  const HOUR = 3_600_000;
  it.each([
    ['fixed-window', HOUR], // the window's end
    ['sliding-window', 2 * HOUR], // the end of the next window
    ['token-bucket', (3 * HOUR) / 10], // until 3 of 10-per-hour tokens have refilled
    ['gcra', (3 * HOUR) / 10],
    ['sliding-log', HOUR], // one window after the newest member
  ] as const)('%s: TTL at most %i ms after a spend of 3', async (algorithm, bound) => {
    const store = redis!.store() as RedisStore;
    const limiter = new Limiter(store, { name: 'ttl', algorithm, limit: 10, window: '1h' });
    await limiter.consume('k', { cost: 3 });
    const [key] = (await redis!.client!.keys(`${store.prefix}*`)).filter((k) => !k.includes('}!'));
    const ttl = await redis!.client!.pttl(key!);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(bound);
    if (algorithm !== 'fixed-window' && algorithm !== 'sliding-window') {
      expect(ttl).toBeGreaterThan(bound - 60_000); // and not shorter than the state matters
    }
  });

  it.each(BUCKETS)(
    '%s: the key expires when its backlog has drained, rounded up (3 per 7 s: 2334 ms after a spend of 1)',
    async (algorithm) => {
      const store = redis!.store() as RedisStore; // Redis clock: no expiry offset
      const limiter = new Limiter(store, { name: 'odd', algorithm, limit: 3, window: '7s' });
      const spent = await limiter.consume('k');
      expect(spent.allowed).toBe(true);
      const [key] = (await redis!.client!.keys(`${store.prefix}*`)).filter(
        (k) => !k.includes('}!'),
      );
      // One token is 7000 units, drained at 3 per ms: 7000 / 3 = 2333.3 ms, so 2334 (2333 would
      // forget the last third of a millisecond of backlog).
      expect(await redis!.client!.pexpiretime(key!)).toBe(spent.receipt.at + 2334);
    },
  );
});
