import { type Algorithm, type FailMode, Limiter, type StoreFailure } from '../../lib';
import { POLICY_ALGORITHMS } from '../../lib/core/policy';
import { backends, TestClock } from '../support/backends';

const stores = backends('clock-readings');

/** Readings a custom clock must never get away with, and the error each one is. */
const BAD_READINGS: Array<[string, unknown, typeof TypeError | typeof RangeError]> = [
  ['undefined', undefined, TypeError],
  ['NaN', NaN, RangeError],
  ['a negative number', -5, RangeError],
  ['-1 ms before the epoch', -1, RangeError],
  ['Infinity', Infinity, RangeError],
  ['a numeric string', String(TestClock.BASE), TypeError],
  ['null', null, TypeError],
];

/** Sets what a TestClock reads, whatever it is. */
function reads(clock: TestClock, value: unknown): void {
  (clock as { now: unknown }).now = value;
}

describe.each(stores)('$name store: a custom clock that reads badly', (backend) => {
  const make = (algorithm: Algorithm, failMode: FailMode, clock = new TestClock()) => {
    const failures: StoreFailure[] = [];
    const limiter = new Limiter(
      backend.store(clock),
      { name: 'bad-clock', algorithm, limit: 3, window: '1m' },
      { failMode, onStoreFailure: (failure) => failures.push(failure) },
    );
    return { clock, limiter, failures };
  };

  it.each(BAD_READINGS)(
    'a clock reading %s is an error naming the clock, thrown to the caller on every algorithm and fail mode; nothing is charged',
    async (_name, reading, errorClass) => {
      for (const algorithm of POLICY_ALGORITHMS) {
        for (const failMode of ['open', 'closed', 'memory'] as const) {
          const { clock, limiter, failures } = make(algorithm, failMode);
          reads(clock, reading);
          const outcomes = await Promise.all(
            Array.from({ length: 10 }, () =>
              limiter.consume('k').then(
                (decision) => decision,
                (error: unknown) => error,
              ),
            ),
          );
          for (const outcome of outcomes) {
            expect(outcome).toBeInstanceOf(errorClass);
            expect((outcome as Error).message).toMatch(/options\.clock/);
          }
          expect(failures).toEqual([]); // not a store failure
          // The clock reads well again: the full budget is there, nothing was charged.
          reads(clock, TestClock.BASE + 1);
          let admitted = 0;
          for (let i = 0; i < 10; i++) if ((await limiter.consume('k')).allowed) admitted++;
          expect({ algorithm, failMode, admitted }).toEqual({ algorithm, failMode, admitted: 3 });
        }
      }
    },
  );

  it('every operation that reads the clock throws the same error: peek, stacks, waitFor, attempt, refund, adjust, reset', async () => {
    const { clock, limiter, failures } = make('sliding-window', 'open');
    const spent = await limiter.consume('k');
    reads(clock, NaN);
    const clockError = /options\.clock returned NaN/;
    await expect(limiter.peek('k')).rejects.toThrow(RangeError);
    await expect(Limiter.consumeAll([{ limiter, keys: 'k' }])).rejects.toThrow(RangeError);
    await expect(Limiter.peekAll([{ limiter, keys: 'k' }])).rejects.toThrow(clockError);
    await expect(limiter.waitFor('k', { maxWaitMs: 1_000 })).rejects.toThrow(RangeError);
    const body = jest.fn();
    await expect(limiter.attempt('k', body)).rejects.toThrow(RangeError);
    expect(body).not.toHaveBeenCalled();
    await expect(limiter.begin('k')).rejects.toThrow(clockError);
    await expect(limiter.adjust(spent, 0)).rejects.toThrow(clockError);
    await expect(limiter.refund(spent)).rejects.toThrow(clockError);
    await expect(limiter.reset('k')).rejects.toThrow(clockError);
    expect(failures).toEqual([]);
    reads(clock, TestClock.BASE);
    expect((await limiter.peek('k')).remaining).toBe(1); // 3 − the spend − the peeked unit
  });

  it('a fractional reading is floored to whole ms, as before', async () => {
    const { clock, limiter } = make('fixed-window', 'closed');
    reads(clock, TestClock.BASE + 59_999.9);
    for (let i = 0; i < 3; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    const refused = await limiter.consume('k');
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBe(1); // the window ends at BASE + 60 000
  });

  it('0 (the epoch) is a valid reading', async () => {
    const clock = new TestClock();
    reads(clock, 0); // from the store's start: a store's expiries follow the clock it was built on
    const { limiter } = make('sliding-log', 'closed', clock);
    for (let i = 0; i < 3; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(false);
  });

  it('a clock that reads badly when the store is built fails the constructor, naming the clock', () => {
    for (const [, reading, errorClass] of BAD_READINGS) {
      const clock = new TestClock();
      reads(clock, reading);
      expect(() => backend.store(clock)).toThrow(errorClass);
      expect(() => backend.store(clock)).toThrow(/options\.clock/);
    }
  });

  it('a clock that throws is the caller’s error too, never a store failure (fail mode open)', async () => {
    const { clock, limiter, failures } = make('fixed-window', 'open');
    const broken = new Error('clock source offline');
    Object.defineProperty(clock, 'now', {
      get: () => {
        throw broken;
      },
      configurable: true,
    });
    const error = await limiter.consume('k').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/options\.clock threw: clock source offline/);
    expect((error as Error).cause).toBe(broken);
    expect(failures).toEqual([]);
  });

  it('one bad reading among calls issued together fails that call alone', async () => {
    const { clock, limiter, failures } = make('fixed-window', 'open');
    const big = new Limiter(
      (limiter as { store: Limiter['store'] }).store,
      { name: 'bad-clock-10', algorithm: 'fixed-window', limit: 10, window: '1m' },
      { failMode: 'open', onStoreFailure: (failure) => failures.push(failure) },
    );
    await big.consume('warm');
    const settle = (p: Promise<unknown>) =>
      p.then(
        (decision) => decision,
        (error: unknown) => error,
      );
    // Issued in one turn: on Redis the first goes at once and the rest share a coalesced batch.
    const calls: Array<Promise<unknown>> = [];
    for (let i = 0; i < 6; i++) {
      if (i === 3) reads(clock, NaN);
      calls.push(settle(big.consume('k')));
      if (i === 3) reads(clock, TestClock.BASE);
    }
    const outcomes = await Promise.all(calls);
    outcomes.forEach((outcome, i) => {
      if (i === 3) {
        expect(outcome).toBeInstanceOf(RangeError);
        expect((outcome as Error).message).toMatch(/options\.clock returned NaN/);
      } else {
        expect(outcome).toMatchObject({ allowed: true });
        expect((outcome as { failure?: unknown }).failure).toBeUndefined();
      }
    });
    expect(failures).toEqual([]);
    expect((await big.peek('k')).remaining).toBe(10 - 5 - 1);
  });

  it('a bad reading after calls were issued fails none of them: each is decided at its own reading', async () => {
    const { clock, limiter, failures } = make('fixed-window', 'closed');
    await limiter.consume('warm');
    const calls = [limiter.consume('k'), limiter.consume('k'), limiter.peek('k')];
    reads(clock, NaN); // before the coalesced batch leaves (at the end of this turn)
    const outcomes = await Promise.all(calls);
    reads(clock, TestClock.BASE);
    expect(outcomes.map((d) => d.allowed)).toEqual([true, true, true]);
    expect(outcomes[2]!.remaining).toBe(0); // the peek, decided after the two spends
    expect(failures).toEqual([]);
  });
});
