import { type Algorithm, type Decision, Limiter } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { backends, TestClock } from '../support/backends';

const stores = backends('retry-after');
const MINUTE = 60_000;

/** Advances to just before `retryAfterMs` (refused) and then to it (allowed). */
async function expectExactRetry(
  limiter: Limiter,
  clock: TestClock,
  keys: string[],
  refused: Decision,
  cost = 1,
): Promise<void> {
  expect(refused.allowed).toBe(false);
  expect(refused.retryAfterMs).toBeGreaterThan(0);
  const start = clock.now;
  clock.now = start + refused.retryAfterMs - 1;
  expect((await limiter.peek(keys, { cost })).allowed).toBe(false);
  clock.now = start + refused.retryAfterMs;
  expect((await limiter.peek(keys, { cost })).allowed).toBe(true);
  expect((await limiter.consume(keys, { cost })).allowed).toBe(true);
}

describe.each(stores)('$name store', (backend) => {
  const make = (algorithm: Algorithm, limit: number, window = MINUTE) => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), { name: 'ra', algorithm, limit, window });
    return { clock, limiter };
  };

  it('fixed window: Retry-After is exactly the window end', async () => {
    const { clock, limiter } = make('fixed-window', 3);
    clock.advance(12_345);
    for (let i = 0; i < 3; i++) await limiter.consume('k');
    const refused = await limiter.consume('k');
    expect(refused.retryAfterMs).toBe(MINUTE - 12_345);
    expect(refused.resetAfterMs).toBe(MINUTE - 12_345);
    await expectExactRetry(limiter, clock, ['k'], refused);
  });

  // Spend patterns: [ms to advance, cost] steps, then a refused call of `cost`.
  const slidingCases: Array<{
    title: string;
    limit: number;
    steps: Array<[number, number]>;
    cost: number;
  }> = [
    { title: 'all in the current window', limit: 5, steps: [[1_000, 5]], cost: 1 },
    {
      title: 'previous window weighing',
      limit: 5,
      steps: [
        [10_000, 5],
        [MINUTE, 0],
      ],
      cost: 1,
    },
    {
      title: 'split across windows',
      limit: 10,
      steps: [
        [45_000, 6],
        [20_000, 4],
      ],
      cost: 1,
    },
    {
      title: 'split across windows, cost 3',
      limit: 10,
      steps: [
        [45_000, 6],
        [20_000, 3],
      ],
      cost: 3,
    },
    {
      title: 'cost equal to the limit',
      limit: 4,
      steps: [
        [59_999, 1],
        [2, 1],
      ],
      cost: 4,
    },
    {
      title: 'fractional weights (7 in 7 s)',
      limit: 7,
      steps: [
        [3_333, 4],
        [7_000 - 3_333 + 1_111, 2],
      ],
      cost: 2,
    },
  ];

  it.each(slidingCases)(
    'sliding window: allowed at retryAfterMs, refused 1 ms before ($title)',
    async ({ limit, steps, cost }) => {
      const window = limit === 7 ? 7_000 : MINUTE;
      const { clock, limiter } = make('sliding-window', limit, window);
      for (const [advance, units] of steps) {
        clock.advance(advance);
        if (units > 0) expect((await limiter.consume('k', { cost: units })).allowed).toBe(true);
      }
      let refused = await limiter.consume('k', { cost });
      while (refused.allowed) refused = await limiter.consume('k', { cost });
      await expectExactRetry(limiter, clock, ['k'], refused, cost);
    },
  );

  it.each(ALGORITHMS)('%s: over several keys the wait is the longest one', async (algorithm) => {
    const { clock, limiter } = make(algorithm, 2);
    await limiter.consume('a', { cost: 2 });
    clock.advance(30_000);
    await limiter.consume('b', { cost: 2 });
    const refusedA = await limiter.peek('a'); // peeks: a refilling bucket must not be spent here
    const refusedB = await limiter.peek('b');
    const both = await limiter.consume(['a', 'b']);
    expect(both.retryAfterMs).toBe(Math.max(refusedA.retryAfterMs, refusedB.retryAfterMs));
    expect(both.blockedBy?.key).toBe(refusedA.retryAfterMs >= refusedB.retryAfterMs ? 'a' : 'b');
    await expectExactRetry(limiter, clock, ['a', 'b'], both);
  });

  it.each(ALGORITHMS)(
    '%s: resetAfterMs is when the key is back to full budget',
    async (algorithm) => {
      const { clock, limiter } = make(algorithm, 4);
      clock.advance(5_000);
      const spent = await limiter.consume('k', { cost: 3 });
      const start = clock.now;
      clock.now = start + spent.resetAfterMs - 1;
      expect((await limiter.peek('k')).remaining).toBeLessThan(3);
      clock.now = start + spent.resetAfterMs;
      expect((await limiter.peek('k')).remaining).toBe(3); // full: 4 − the peeked unit
    },
  );
});

describe.each(stores)('$name store: window boundaries', (backend) => {
  it.each([
    ['fixed-window', 10, 'lets a burst of twice the limit straddle a boundary'],
    ['sliding-window', 5, 'does not'],
  ] as const)(
    '%s: 5 just before a boundary and 5 just after admit %i (%s)',
    async (algorithm, expected, _how) => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'b',
        algorithm,
        limit: 5,
        window: MINUTE,
      });
      clock.advance(MINUTE - 1);
      let admitted = 0;
      for (let i = 0; i < 5; i++) if ((await limiter.consume('k')).allowed) admitted++;
      clock.advance(1);
      for (let i = 0; i < 5; i++) if ((await limiter.consume('k')).allowed) admitted++;
      expect(admitted).toBe(expected);
    },
  );
});

describe.each(stores)('$name store: the instant a spend stops counting', (backend) => {
  it.each(ALGORITHMS)(
    '%s: a spend counts until its window is over, and not an instant longer',
    async (algorithm) => {
      const clock = new TestClock();
      clock.advance(123); // not on a window edge: the log's trailing window is what is tested
      const limiter = new Limiter(backend.store(clock), {
        name: 'edge',
        algorithm,
        limit: 1,
        window: 1_000,
      });
      const spent = await limiter.consume('k');
      clock.now = spent.receipt.at + spent.resetAfterMs - 1;
      expect((await limiter.peek('k')).allowed).toBe(false);
      clock.now = spent.receipt.at + spent.resetAfterMs;
      expect((await limiter.peek('k')).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(true);
    },
  );
});
