import { type Algorithm, type Attempt, Limiter, type Receipt } from '../../lib';
import { backends, TestClock } from '../support/backends';

// Finding 5 of the second core review: the ledger keeps at most 124 refunded ids per caller key;
// older ones raise a floor, and a spend at or below the floor was refused as if it were a copy.
// A spend made through begin()/attempt() is registered when it is made, so its first refund or
// adjustment is honoured whatever the ledger has forgotten; a copy still gives nothing.
const stores = backends('ledger-floor', { uncoalesced: true });
const copy = (receipt: Receipt): Receipt => JSON.parse(JSON.stringify(receipt)) as Receipt;
const WINDOWS: Algorithm[] = ['fixed-window', 'sliding-window', 'sliding-log'];
const ALL: Algorithm[] = [...WINDOWS, 'token-bucket', 'gcra'];

/** A limiter of 1,000 per hour: nothing here comes near the limit or the end of a window. */
function limiterOn(backend: (typeof stores)[number], algorithm: Algorithm, clock: TestClock) {
  return new Limiter(backend.store(clock), {
    name: 'floor',
    algorithm,
    limit: 1_000,
    window: '1h',
  });
}

/** `n` quick spends on `keys`, each refunded (or adjusted to 0) at once, one ms apart. */
async function quickPairs(
  limiter: Limiter,
  clock: TestClock,
  keys: string | string[],
  n: number,
  settle: 'refund' | 'adjust' = 'refund',
): Promise<void> {
  for (let i = 0; i < n; i++) {
    clock.advance(1);
    const spent = await limiter.consume(keys);
    expect(spent.allowed).toBe(true);
    if (settle === 'refund') expect(await limiter.refund(spent)).toBe(true);
    else await limiter.adjust(spent, 0);
  }
}

const remaining = async (limiter: Limiter, keys: string | string[]) =>
  (await limiter.peek(keys)).remaining;

describe.each(stores)('$name store: refunds past the ledger’s floor', (backend) => {
  it.each(ALL)(
    '%s: a begin() spend older than 127 later refunds refunds exactly its cost, once',
    async (algorithm) => {
      const clock = new TestClock();
      const limiter = limiterOn(backend, algorithm, clock);
      const long = await limiter.begin('k', { cost: 3 });
      await quickPairs(limiter, clock, 'k', 127);
      clock.advance(1);
      const before = await remaining(limiter, 'k');
      long.refund();
      await long.settle();
      expect(await remaining(limiter, 'k')).toBe(before + 3);
      // 130 more refunds trim its own id from the ledger: a copy of its receipt gives nothing.
      await quickPairs(limiter, clock, 'k', 130);
      const after = await remaining(limiter, 'k');
      expect(await limiter.refund(copy(long.decision.receipt))).toBe(true); // sent…
      expect(await remaining(limiter, 'k')).toBe(after); // …and refused by the ledger
    },
  );

  it.each(WINDOWS)(
    '%s: adjust() of a begin() spend after 200 later adjustments settles to the actual cost, once',
    async (algorithm) => {
      const clock = new TestClock();
      const limiter = limiterOn(backend, algorithm, clock);
      const long = await limiter.begin('k', { cost: 100 }); // a long completion, 100 reserved
      await quickPairs(limiter, clock, 'k', 200, 'adjust'); // 200 quick ones, each settled
      const before = await remaining(limiter, 'k');
      long.adjust(40);
      await long.settle();
      expect(await remaining(limiter, 'k')).toBe(before + 60);
      // Adjusted at most once, a copy included, however far the floor has moved since.
      await quickPairs(limiter, clock, 'k', 130, 'adjust');
      const after = await remaining(limiter, 'k');
      await limiter.adjust(copy(long.decision.receipt), 0);
      expect(await remaining(limiter, 'k')).toBe(after);
      // A refund after the adjustment gives back what the spend then costs, once.
      await limiter.refund(copy(long.decision.receipt));
      expect(await remaining(limiter, 'k')).toBe(after + 40);
      await quickPairs(limiter, clock, 'k', 130);
      const last = await remaining(limiter, 'k');
      await limiter.refund(copy(long.decision.receipt));
      await limiter.adjust(copy(long.decision.receipt), 0);
      expect(await remaining(limiter, 'k')).toBe(last);
    },
  );

  it('attempt(): the refund of a slow attempt survives 127 refunds of quick ones (keys in several slots)', async () => {
    const clock = new TestClock();
    const limiter = limiterOn(backend, 'fixed-window', clock);
    // Two keys: on Cluster they sit in different slots, so the spend goes slot group by group.
    const keys = ['ip:203.0.113.7', 'email:5f4dcc3b5aa765d6'];
    let slow!: Attempt;
    let release!: () => void;
    const finished = limiter.attempt(keys, async (attempt) => {
      slow = attempt;
      await new Promise<void>((resolve) => (release = resolve));
      attempt.refund(); // e.g. the sign-in succeeded after all
    });
    while (slow === undefined) await new Promise((resolve) => setImmediate(resolve));
    await quickPairs(limiter, clock, keys, 127);
    const before = await remaining(limiter, keys);
    release();
    await finished;
    expect(await remaining(limiter, keys)).toBe(before + 1);
    for (const key of keys) expect(await remaining(limiter, key)).toBe(1_000 - 1);
  });

  it('coalesced begin()s are registered too: each refunds once after 127 later refunds', async () => {
    const clock = new TestClock();
    const limiter = limiterOn(backend, 'sliding-window', clock);
    // Issued together: with coalescing on, all but the first go to Redis as one batch.
    const attempts = await Promise.all([1, 2, 3, 4].map((cost) => limiter.begin('k', { cost })));
    await quickPairs(limiter, clock, 'k', 127);
    const before = await remaining(limiter, 'k');
    for (const attempt of attempts) {
      attempt.refund();
      await attempt.settle();
    }
    expect(await remaining(limiter, 'k')).toBe(before + 10);
    await quickPairs(limiter, clock, 'k', 130);
    const after = await remaining(limiter, 'k');
    for (const attempt of attempts) await limiter.refund(copy(attempt.decision.receipt));
    expect(await remaining(limiter, 'k')).toBe(after);
  });

  it('a plain consume() receipt below the floor still refunds nothing (no spend is registered on that path)', async () => {
    const clock = new TestClock();
    const limiter = limiterOn(backend, 'fixed-window', clock);
    const plain = await limiter.consume('k', { cost: 3 });
    await quickPairs(limiter, clock, 'k', 127);
    const before = await remaining(limiter, 'k');
    await limiter.refund(plain);
    expect(await remaining(limiter, 'k')).toBe(before);
  });
});
