import {
  type Algorithm,
  type Decision,
  Limiter,
  MemoryStore,
  type Receipt,
  type Store,
} from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { backends, TestClock } from '../support/backends';

const stores = backends('adjust');

/** Units left now, read without spending (a peek's `remaining` is as if one unit were spent). */
const left = async (limiter: Limiter, keys: string | string[]) => {
  const peeked = await limiter.peek(keys);
  return peeked.allowed ? peeked.remaining + 1 : peeked.remaining;
};

/** The first instant (ms from now) at which `cost` is allowed again, found by stepping. */
async function exactWait(limiter: Limiter, clock: TestClock, keys: string, wait: number) {
  clock.advance(wait - 1);
  const early = await limiter.peek(keys);
  clock.advance(1);
  const onTime = await limiter.peek(keys);
  return { early: early.allowed, onTime: onTime.allowed };
}

describe.each(stores)('$name store: adjust settles a spend to its actual cost', (backend) => {
  describe.each(ALGORITHMS)('%s', (algorithm: Algorithm) => {
    const setup = (limit = 10) => {
      const clock = new TestClock();
      clock.advance(1_000); // inside a window, not on its boundary
      const limiter = new Limiter(backend.store(clock), {
        name: 'adj',
        algorithm,
        limit,
        window: '1m',
      });
      return { clock, limiter };
    };

    it('less than reserved: the difference goes back, exactly', async () => {
      const { limiter } = setup();
      const reserved = await limiter.consume('k', { cost: 6 });
      expect(await left(limiter, 'k')).toBe(4);
      expect(await limiter.adjust(reserved, 2)).toBe(true);
      expect(await left(limiter, 'k')).toBe(8);
    });

    it('more than reserved: the extra is charged without a limit check, into debt, and the wait is exact', async () => {
      const { clock, limiter } = setup();
      const reserved = await limiter.consume('k', { cost: 6 });
      expect(await limiter.adjust(reserved, 14)).toBe(true);
      const refused = await limiter.consume('k');
      expect(refused.allowed).toBe(false);
      expect(refused.remaining).toBe(0);
      // The debt is waited out: refused one ms before retryAfterMs, allowed at it.
      expect(await exactWait(limiter, clock, 'k', refused.retryAfterMs)).toEqual({
        early: false,
        onTime: true,
      });
    });

    it('adjusts at most once per receipt, copies included', async () => {
      const { limiter } = setup();
      const reserved = await limiter.consume('k', { cost: 6 });
      expect(await limiter.adjust(reserved, 3)).toBe(true);
      expect(await limiter.adjust(reserved, 1)).toBe(false);
      // A copy (as another process would hold it) reaches the store, whose ledger ignores it.
      const copy: Receipt = JSON.parse(JSON.stringify(reserved.receipt)) as Receipt;
      expect(await limiter.adjust(copy, 0)).toBe(true);
      expect(await left(limiter, 'k')).toBe(7);
    });

    it('does nothing after a refund; a refund after it gives back what the spend then costs', async () => {
      const { limiter } = setup();
      const refunded = await limiter.consume('k', { cost: 3 });
      await limiter.refund(refunded);
      expect(await limiter.adjust(refunded, 9)).toBe(false);
      const copy: Receipt = JSON.parse(JSON.stringify(refunded.receipt)) as Receipt;
      await limiter.adjust(copy, 9); // the ledger knows it was refunded
      expect(await left(limiter, 'k')).toBe(10);

      const down = await limiter.consume('k', { cost: 5 });
      await limiter.adjust(down, 2);
      expect(await left(limiter, 'k')).toBe(8);
      await limiter.refund(down);
      expect(await left(limiter, 'k')).toBe(10);

      const up = await limiter.consume('k', { cost: 2 });
      await limiter.adjust(up, 7);
      expect(await left(limiter, 'k')).toBe(3);
      await limiter.refund(up);
      expect(await left(limiter, 'k')).toBe(10);
    });

    it('several keys: every key is settled alike (keys in different Cluster slots too)', async () => {
      const { limiter } = setup();
      const keys = ['ip:1', 'email:1', 'device:9'];
      const reserved = await limiter.consume(keys, { cost: 5 });
      await limiter.adjust(reserved, 1);
      for (const key of keys) expect(await left(limiter, key)).toBe(9);
      const again = await limiter.consume(keys, { cost: 2 });
      await limiter.adjust(again, 4);
      for (const key of keys) expect(await left(limiter, key)).toBe(5);
    });

    it('to 0 gives everything back; a refund after it gives nothing more', async () => {
      const { limiter } = setup();
      await limiter.consume('k', { cost: 2 });
      const reserved = await limiter.consume('k', { cost: 3 });
      await limiter.adjust(reserved, 0);
      expect(await left(limiter, 'k')).toBe(8);
      await limiter.refund(reserved);
      expect(await left(limiter, 'k')).toBe(8);
    });

    it('a reset since the spend: the adjustment does nothing on that key', async () => {
      const { limiter } = setup();
      const reserved = await limiter.consume(['a', 'b'], { cost: 4 });
      await limiter.reset('a');
      await limiter.adjust(reserved, 9);
      expect(await left(limiter, 'a')).toBe(10);
      expect(await left(limiter, 'b')).toBe(1);
    });

    it('refused and read-only decisions adjust nothing', async () => {
      const { limiter } = setup(2);
      await limiter.consume('k', { cost: 2 });
      const refused = await limiter.consume('k');
      expect(await limiter.adjust(refused, 0)).toBe(false);
      expect(await limiter.adjust(await limiter.peek('k'), 0)).toBe(false);
      expect(await left(limiter, 'k')).toBe(0);
    });

    it('an attempt settles to the cost the handler set; refund() wins over adjust()', async () => {
      const { limiter } = setup();
      await limiter.attempt(
        'k',
        (attempt) => {
          attempt.adjust(9);
          attempt.adjust(2); // the last call counts
        },
        { cost: 5 },
      );
      expect(await left(limiter, 'k')).toBe(8);
      await limiter.attempt(
        'k',
        (attempt) => {
          attempt.adjust(7);
          attempt.refund();
        },
        { cost: 4 },
      );
      expect(await left(limiter, 'k')).toBe(8);
      const attempt = await limiter.begin('k');
      await attempt.settle();
      expect(() => attempt.adjust(0)).toThrow(/after the attempt was settled/);
    });
  });

  describe('the edges of a window', () => {
    it('fixed window: once the charged window is over, neither less nor more changes anything', async () => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'edge',
        algorithm: 'fixed-window',
        limit: 10,
        window: '1m',
      });
      const down = await limiter.consume('k', { cost: 5 });
      const up = await limiter.consume('k', { cost: 1 });
      clock.advance(60_000);
      await limiter.consume('k', { cost: 3 });
      expect(await limiter.adjust(down, 0)).toBe(true);
      expect(await limiter.adjust(up, 10)).toBe(true);
      expect(await left(limiter, 'k')).toBe(7);
    });

    it('sliding window: in the next window the difference goes to the weighted previous count', async () => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'edge',
        algorithm: 'sliding-window',
        limit: 10,
        window: '1m',
      });
      const spent = await limiter.consume('k', { cost: 8 });
      clock.advance(60_000 + 30_000); // half-way through the next window: prev weighs half
      expect(await left(limiter, 'k')).toBe(6);
      await limiter.adjust(spent, 4);
      expect(await left(limiter, 'k')).toBe(8);
      await limiter.refund(spent);
      expect(await left(limiter, 'k')).toBe(10);
    });

    it('sliding log: the extra members count from the spend instant and leave with it', async () => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'edge',
        algorithm: 'sliding-log',
        limit: 10,
        window: '1m',
      });
      const spent = await limiter.consume('k', { cost: 1 });
      clock.advance(30_000);
      await limiter.consume('k', { cost: 2 });
      await limiter.adjust(spent, 6);
      expect(await left(limiter, 'k')).toBe(2);
      clock.advance(30_000); // the first spend (all 6 units) leaves the window
      expect(await left(limiter, 'k')).toBe(8);
    });
  });

  describe.each(['token-bucket', 'gcra'] as const)('%s: the bucket rules', (algorithm) => {
    const bucket = () => {
      const clock = new TestClock();
      // One token per second, 10 at most.
      const limiter = new Limiter(backend.store(clock), {
        name: 'edge',
        algorithm,
        limit: 10,
        window: '10s',
      });
      return { clock, limiter };
    };

    it('a latest spend adjusted down stays the latest: its refund is exact', async () => {
      const { clock, limiter } = bucket();
      await limiter.consume('k');
      clock.advance(900); // 0.1 token left of the backlog: the history's low point
      await limiter.consume('k');
      clock.advance(10); // backlog 1.09 tokens
      const latest = await limiter.consume('k', { cost: 5 });
      await limiter.adjust(latest, 3);
      expect(await left(limiter, 'k')).toBe(5); // backlog 4.09
      // Still the latest: its refund takes all 3 back, not only the 0.1 the history bounds an
      // earlier spend's refund by.
      await limiter.refund(latest);
      expect(await left(limiter, 'k')).toBe(8);
    });

    it('while busy since the spend, more is added exactly; once full since, nothing is added', async () => {
      const { clock, limiter } = bucket();
      const busy = await limiter.consume('k', { cost: 4 });
      clock.advance(2_000); // 2 tokens back; still busy
      await limiter.adjust(busy, 6);
      expect(await left(limiter, 'k')).toBe(6);

      const full = await limiter.consume('j', { cost: 2 });
      clock.advance(5_000); // full again since the spend
      expect(await left(limiter, 'j')).toBe(10);
      await limiter.adjust(full, 5); // it no longer weighs: nothing added, as nothing refunded
      expect(await left(limiter, 'j')).toBe(10);
      await limiter.refund(full);
      expect(await left(limiter, 'j')).toBe(10);
    });
  });

  it('stacks: adjustAll settles each part to its own cost', async () => {
    const clock = new TestClock();
    const store = backend.store(clock);
    const hourly = new Limiter(store, {
      name: 'tokens-h',
      algorithm: 'fixed-window',
      limit: 100,
      window: '1h',
    });
    const perMinute = new Limiter(store, {
      name: 'tokens-m',
      algorithm: 'sliding-window',
      limit: 20,
      window: '1m',
    });
    const stacked = await Limiter.consumeAll([
      { limiter: hourly, keys: 'key:1', cost: 10 },
      { limiter: perMinute, keys: 'key:1', cost: 10 },
    ]);
    expect(stacked.allowed).toBe(true);
    expect(await Limiter.adjustAll(stacked, [30, 4])).toBe(true);
    expect(await left(hourly, 'key:1')).toBe(70);
    expect(await left(perMinute, 'key:1')).toBe(16);
    expect(await Limiter.adjustAll(stacked, [0, 0])).toBe(false);
    await expect(Limiter.adjustAll(stacked, [1])).rejects.toThrow(/one actual cost per part/);
  });

  it('50 concurrent reserve-then-adjust: every admission fitted at its reservation, and the budget is exactly the final costs', async () => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'race',
      algorithm: 'fixed-window',
      limit: 100,
      window: '1h',
    });
    await limiter.peek('warm'); // connections open before the race
    const settled: number[] = [];
    const admitted: Decision[] = [];
    await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const reserved = await limiter.consume('shared', { cost: 10 });
        if (!reserved.allowed) return;
        admitted.push(reserved);
        const actual = (i * 7) % 13; // 0..12: some less, some more than reserved
        await limiter.adjust(reserved, actual);
        settled.push(actual);
      }),
    );
    // Reservations never pass the limit: at most 100 units were ever reserved at once, and each
    // admitted call saw room for its reservation.
    expect(admitted.length).toBeGreaterThanOrEqual(10);
    for (const decision of admitted) expect(decision.remaining).toBeGreaterThanOrEqual(0);
    const total = settled.reduce((a, b) => a + b, 0);
    expect(await left(limiter, 'shared')).toBe(Math.max(0, 100 - total));
  });
});

describe('adjust: bad input is refused before the store is touched', () => {
  const untouched = (): Store & { calls: number } => {
    const inner = new MemoryStore();
    const store = Object.assign(Object.create(inner) as MemoryStore, { calls: 0 });
    store.adjust = () => {
      store.calls += 1;
      return Promise.resolve();
    };
    return store;
  };

  it.each([-1, 1.5, Number.NaN, Infinity, '3', undefined])('actualCost %p', async (bad) => {
    const store = untouched();
    const limiter = new Limiter(store, {
      name: 'v',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1m',
    });
    const spent = await limiter.consume('k');
    await expect(limiter.adjust(spent, bad as number)).rejects.toThrow(
      /actualCost must be a whole number ≥ 0/,
    );
    expect(store.calls).toBe(0);
  });

  it('an actual cost too large for exact arithmetic over the window', async () => {
    const limiter = new Limiter(new MemoryStore(), {
      name: 'v',
      algorithm: 'fixed-window',
      limit: 5,
      window: '30d',
    });
    const spent = await limiter.consume('k');
    await expect(limiter.adjust(spent, 2 ** 52)).rejects.toThrow(/too large for a window/);
  });

  it("another policy's receipt, and a store without adjust", async () => {
    const a = new Limiter(new MemoryStore(), {
      name: 'a',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1m',
    });
    const b = new Limiter(new MemoryStore(), {
      name: 'b',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1m',
    });
    await expect(b.adjust(await a.consume('k'), 0)).rejects.toThrow(/belongs to policy 'a'/);
    const bare = new MemoryStore() as Store;
    Object.defineProperty(bare, 'adjust', { value: undefined });
    const old = new Limiter(bare, {
      name: 'old',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1m',
    });
    await expect(old.adjust(await old.consume('k'), 0)).rejects.toThrow(/cannot adjust a spend/);
  });

  it('Attempt.adjust checks its argument at once', async () => {
    const limiter = new Limiter(new MemoryStore(), {
      name: 'v',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1m',
    });
    const attempt = await limiter.begin('k');
    expect(() => attempt.adjust(-2)).toThrow(/Attempt.adjust\(\): actualCost must be/);
    await attempt.settle();
  });
});
