import { Limiter, MemoryStore } from '../../lib';
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
    clock.advance(2 * 60_000 + 1); // past the end of the next window: nothing weighs any more
    await limiter.consume('late');
    expect(store.size).toBe(1);
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
