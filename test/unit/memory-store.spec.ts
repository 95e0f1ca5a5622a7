import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Limiter, MemoryStore, type Receipt } from '../../lib';
import { TestClock } from '../support/backends';

describe('MemoryStore housekeeping', () => {
  it('sweeps expired state as writes happen: memory stays bounded by live keys', async () => {
    const clock = new TestClock();
    const store = new MemoryStore({ clock: clock.read, sweepIntervalMs: 1_000 });
    const limiter = new Limiter(store, {
      name: 'p',
      algorithm: 'sliding-window',
      limit: 5,
      window: '1m',
    });
    for (let i = 0; i < 1_000; i++) await limiter.consume(`caller:${i}`);
    expect(store.size).toBe(1_000);
    clock.advance(2 * 60_000 + 1); // past the end of the next window: nothing weighs any more…
    await limiter.consume('late');
    // …but on a custom clock state is kept a day past its expiry, as RedisStore keeps keys then
    // (a clock that steps back into a window it had passed still finds that window's state).
    expect(store.size).toBe(1_001);
    clock.advance(86_400_000);
    await limiter.consume('later');
    expect(store.size).toBe(2); // 'late' (its window ended less than a day ago) and 'later'
  });

  it('keeps no timer per key', async () => {
    const store = new MemoryStore();
    const limiter = new Limiter(store, {
      name: 'p',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1h',
    });
    const before = process.getActiveResourcesInfo().length;
    for (let i = 0; i < 500; i++) await limiter.consume(`caller:${i}`);
    expect(process.getActiveResourcesInfo().length).toBeLessThanOrEqual(before);
  });

  it('reads a monotonic clock by default: a wall-clock jump does not reopen a window', async () => {
    const store = new MemoryStore();
    const limiter = new Limiter(store, {
      name: 'p',
      algorithm: 'fixed-window',
      limit: 1,
      window: '1h',
    });
    expect((await limiter.consume('k')).allowed).toBe(true);
    const realNow = Date.now();
    const jump = jest.spyOn(Date, 'now').mockReturnValue(realNow + 2 * 3_600_000);
    try {
      expect((await limiter.consume('k')).allowed).toBe(false);
    } finally {
      jump.mockRestore();
    }
  });

  it('rejects bad options', () => {
    expect(() => new MemoryStore({ clock: 5 as never })).toThrow(TypeError);
    expect(() => new MemoryStore({ sweepIntervalMs: -1 })).toThrow(RangeError);
  });
});

describe('MemoryStore under a flood of new keys', () => {
  /** The heap in use after a full garbage collection. */
  function heapAfterGc(): number {
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
    return process.memoryUsage().heapUsed;
  }

  it('a million distinct keys: at most maxKeys entries (default 100 000), the heap under 64 MB more', async () => {
    const store = new MemoryStore();
    const limiter = new Limiter(store, {
      name: 'flood',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1h',
    });
    const before = heapAfterGc();
    const { limits } = limiter.policy;
    const request = { policy: 'flood', algorithm: 'fixed-window', limits, cost: 1 } as const;
    for (let i = 0; i < 1_000_000; i++) await store.consume({ ...request, keys: [`flood:${i}`] });
    expect(store.size).toBeLessThanOrEqual(100_000);
    expect(heapAfterGc() - before).toBeLessThan(64 * 1024 * 1024);
  }, 60_000);

  it('forgets the state used longest ago first: a locked-out key stays locked out', async () => {
    const clock = new TestClock();
    const store = new MemoryStore({ clock: clock.read, maxKeys: 100 });
    const limiter = new Limiter(store, {
      name: 'lru',
      algorithm: 'fixed-window',
      limit: 2,
      window: '1h',
    });
    await limiter.consume('old');
    await limiter.consume('hot');
    for (let i = 0; i < 150; i++) {
      await limiter.consume(`new:${i}`);
      if (i % 50 === 0) await limiter.consume('hot'); // …used again (refused, too): it stays
    }
    expect(store.size).toBe(100);
    expect((await limiter.peek('hot')).allowed).toBe(false); // its two spends are remembered
    expect((await limiter.peek('old')).remaining).toBe(1); // forgotten: a full budget again
  });

  it('rejects a bad maxKeys and unknown options', () => {
    expect(() => new MemoryStore({ maxKeys: 0 })).toThrow(/maxKeys/);
    expect(() => new MemoryStore({ maxKeys: 1.5 })).toThrow(/maxKeys/);
    expect(() => new MemoryStore({ maxkeys: 10 } as never)).toThrow(/maxkeys/);
  });
});

describe('MemoryStore eviction keeps a caller’s ledger with its state', () => {
  it('a refund of a spend made before a reset stays a no-op after a flood of other keys', async () => {
    const clock = new TestClock();
    const store = new MemoryStore({ clock: clock.read, maxKeys: 100 });
    const limiter = new Limiter(store, {
      name: 'p',
      algorithm: 'fixed-window',
      limit: 3,
      window: 60_000,
    });
    const old = await limiter.consume('victim');
    const copy = JSON.parse(JSON.stringify(old.receipt)) as Receipt;
    await limiter.reset('victim');
    for (let i = 0; i < 3; i++) await limiter.consume('victim'); // full
    for (let i = 0; i < 99; i++) await limiter.consume(`other:${i}`); // one entry must go
    const before = await limiter.peek('victim');
    await limiter.refund(copy); // charged before the reset: nothing to give back, whatever went
    expect(await limiter.peek('victim')).toEqual(before);
  });
});
