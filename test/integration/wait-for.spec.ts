import {
  Limiter,
  MemoryStore,
  type PolicyOptions,
  RateLimitedError,
  type Sleep,
  type Store,
  StoreUnavailableError,
} from '../../lib';
import { backends, TestClock } from '../support/backends';

const stores = backends('wait-for');

/** 2 per second, fixed windows. */
const partner: PolicyOptions = {
  name: 'partner',
  algorithm: 'fixed-window',
  limit: 2,
  window: '1s',
};

/** A sleep that advances the test clock instead of waiting, and records what it was asked. */
function clockSleep(clock: TestClock, asked: number[]): Sleep {
  return (ms, signal) => {
    signal?.throwIfAborted();
    asked.push(ms);
    clock.advance(ms);
    return Promise.resolve();
  };
}

describe.each(stores)('$name store: waitFor / waitForAll', (backend) => {
  let clock: TestClock;
  let store: Store;
  let asked: number[];
  let limiter: Limiter;
  beforeEach(() => {
    clock = new TestClock();
    clock.advance(250); // a quarter into a window
    store = backend.store(clock);
    asked = [];
    limiter = new Limiter(store, partner, { sleep: clockSleep(clock, asked) });
  });

  it('allowed at once: no sleep', async () => {
    const decision = await limiter.waitFor('partner:acme', { maxWaitMs: 5_000 });
    expect(decision.allowed).toBe(true);
    expect(asked).toEqual([]);
  });

  it('refused: sleeps until retryAfterMs (plus at most a tenth, ≤ 25 ms), then is allowed', async () => {
    await limiter.consume('partner:acme');
    await limiter.consume('partner:acme');
    const decision = await limiter.waitFor('partner:acme', { maxWaitMs: 5_000 });
    expect(decision.allowed).toBe(true);
    expect(decision.receipt.spent).toBe(true);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toBeGreaterThanOrEqual(750); // the rest of the window
    expect(asked[0]).toBeLessThanOrEqual(775);
  });

  it('one turn per window for many waiters: never more than the limit in a window', async () => {
    const at: number[] = [];
    for (let i = 0; i < 7; i++) {
      const d = await limiter.waitFor('partner:acme', { maxWaitMs: 10_000 });
      at.push(d.receipt.at);
    }
    const perWindow = new Map<number, number>();
    for (const t of at)
      perWindow.set(Math.floor(t / 1000), (perWindow.get(Math.floor(t / 1000)) ?? 0) + 1);
    expect(Math.max(...perWindow.values())).toBe(2);
    expect(asked.length).toBe(3); // 7 calls at 2 per window: 3 waits
  });

  it('rejects with the refusal, without sleeping, when the turn would come after maxWaitMs', async () => {
    await limiter.consume('partner:acme');
    await limiter.consume('partner:acme');
    // The tries' own time counts against maxWaitMs. Frozen, it is 0 whatever the machine's speed
    // (the sleeps advance the test clock), so the bound is exact: a turn 750 ms away fits in 750.
    const frozen = performance.now();
    const monotonic = jest.spyOn(performance, 'now').mockReturnValue(frozen);
    try {
      for (const maxWaitMs of [700, 749]) {
        const error: unknown = await limiter
          .waitFor('partner:acme', { maxWaitMs })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(RateLimitedError);
        expect((error as RateLimitedError).retryAfterMs).toBe(750);
      }
      expect(asked).toEqual([]);
      // Enough: it waits (its jitter cut to what is left of the budget), then is allowed.
      expect((await limiter.waitFor('partner:acme', { maxWaitMs: 750 })).allowed).toBe(true);
      expect(asked).toEqual([750]);
    } finally {
      monotonic.mockRestore();
    }
  });

  it('an aborted signal rejects with its reason: before the first try, and while sleeping', async () => {
    const aborted = AbortSignal.abort(new Error('shutting down'));
    await expect(
      limiter.waitFor('partner:acme', { maxWaitMs: 5_000, signal: aborted }),
    ).rejects.toThrow('shutting down');
    expect((await limiter.peek('partner:acme')).remaining).toBe(1); // nothing was tried

    const controller = new AbortController();
    const sleeping = new Limiter(store, partner, {
      sleep: (_ms, signal) =>
        new Promise((_, reject) => {
          signal!.addEventListener('abort', () => reject(signal!.reason as Error), { once: true });
          controller.abort(new Error('cancelled'));
        }),
    });
    await sleeping.consume('partner:b');
    await sleeping.consume('partner:b');
    await expect(
      sleeping.waitFor('partner:b', { maxWaitMs: 5_000, signal: controller.signal }),
    ).rejects.toThrow('cancelled');
  });

  it('waitForAll waits for the refusing part of a stack, then spends on every part', async () => {
    const perKey = new Limiter(
      store,
      { ...partner, name: 'per-key', limit: 10, window: '1h' },
      { sleep: clockSleep(clock, asked) },
    );
    const parts = [
      { limiter: perKey, keys: 'key:1' },
      { limiter, keys: 'partner:acme' },
    ];
    await Limiter.consumeAll(parts);
    await Limiter.consumeAll(parts);
    const stacked = await Limiter.waitForAll(parts, { maxWaitMs: 5_000 });
    expect(stacked.allowed).toBe(true);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toBeGreaterThanOrEqual(750);
    expect((await perKey.peek('key:1')).remaining).toBe(6); // 3 spent, the peek's 1 more fits
    await Limiter.consumeAll(parts); // the partner's 2nd in this window
    const refused: unknown = await Limiter.waitForAll(parts, { maxWaitMs: 0 }).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).decision.policy).toBe('partner');
  });

  it('with real timers on the store clock: every waiter gets a turn, none past the limit', async () => {
    const real = new Limiter(backend.store(), { ...partner, name: 'real', window: 200 });
    const decisions = await Promise.all(
      Array.from({ length: 6 }, () => real.waitFor('partner:acme', { maxWaitMs: 5_000 })),
    );
    expect(decisions.every((d) => d.allowed)).toBe(true);
    const perWindow = new Map<number, number>();
    for (const d of decisions) {
      const w = Math.floor(d.receipt.at / 200);
      perWindow.set(w, (perWindow.get(w) ?? 0) + 1);
    }
    expect(Math.max(...perWindow.values())).toBeLessThanOrEqual(2);
  });
});

describe('waitFor: validation and store failures', () => {
  const limiter = new Limiter(new MemoryStore(), partner);
  it.each([
    [
      {},
      /waitFor\(\) options\.maxWaitMs must be a number of ms from 0 to 2147483647; got undefined/,
    ],
    [{ maxWaitMs: -1 }, /options\.maxWaitMs must be a number of ms from 0/],
    [{ maxWaitMs: Number.NaN }, /options\.maxWaitMs/],
    [{ maxWaitMs: 10, signal: {} }, /waitFor\(\) options\.signal must be an AbortSignal/],
    [{ maxWaitMs: 10, timeout: 5 }, /waitFor\(\) options\.timeout is not an option/],
    [{ maxWaitMs: 10, cost: 3 }, /cost/],
  ])('%j is refused before the store is touched', async (options, message) => {
    await expect(limiter.waitFor('k', options as unknown as { maxWaitMs: number })).rejects.toThrow(
      message,
    );
  });

  it('a store failing closed rejects at once with StoreUnavailableError', async () => {
    const failing: Store = {
      consume: () => Promise.reject(new Error('down')),
      peek: () => Promise.reject(new Error('down')),
      refund: () => Promise.resolve(),
      reset: () => Promise.resolve(),
    };
    const asked: number[] = [];
    const closed = new Limiter(failing, partner, {
      onStoreFailure: () => {},
      sleep: (ms) => {
        asked.push(ms);
        return Promise.resolve();
      },
    });
    await expect(closed.waitFor('k', { maxWaitMs: 5_000 })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    expect(asked).toEqual([]);
  });
});
