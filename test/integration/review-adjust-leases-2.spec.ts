/**
 * Review of 846a7dc (adjust) and d1eb33d (concurrency leases), second part: what held under
 * attack, and two more gaps (marked it.failing with the bug they show).
 */
import { Limiter } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { backends, TestClock } from '../support/backends';

const stores = backends('review-adjust-leases-2');

/** Units left now, read without spending (a peek's `remaining` is as if one unit were spent). */
const left = async (limiter: Limiter, keys: string | string[]) => {
  const peeked = await limiter.peek(keys);
  return peeked.allowed ? peeked.remaining + 1 : peeked.remaining;
};

describe.each(stores)('$name store: review of adjust and leases (2)', (backend) => {
  it.each(ALGORITHMS)(
    '%s: adjust up/down then refund gives back everything, through stacks and coalesced batches (member naming)',
    async (algorithm) => {
      const clock = new TestClock();
      clock.advance(1_000);
      const store = backend.store(clock);
      const limiter = new Limiter(store, { name: 'rv-name', algorithm, limit: 10, window: '1m' });
      const other = new Limiter(store, {
        name: 'rv-name-other',
        algorithm: 'fixed-window',
        limit: 100,
        window: '1m',
      });
      const wrong: string[] = [];
      for (const [reserved, target] of [
        [1, 3],
        [3, 1],
        [3, 0],
        [1, 0],
        [2, 5],
        [4, 4],
      ] as const) {
        const stacked = await Limiter.consumeAll([
          { limiter: other, keys: ['s', 'zz9'] },
          { limiter, keys: ['s', 'q7'], cost: reserved },
        ]);
        await Limiter.adjustAll(stacked, [1, target]);
        await Limiter.refundAll(stacked);
        const stack = [await left(limiter, 's'), await left(limiter, 'q7')];
        if (stack.some((n) => n !== 10))
          wrong.push(`stack ${reserved}->${target}: ${stack.join(' ')}`);
        const batch = await Promise.all([
          limiter.consume('b', { cost: reserved }),
          limiter.consume('b2'),
          limiter.consume(['b', 'c5']),
        ]);
        await limiter.adjust(batch[0], target);
        await limiter.adjust(batch[2], 2);
        await Promise.all(batch.map((d) => limiter.refund({ ...d.receipt })));
        const batched = [await left(limiter, 'b'), await left(limiter, 'c5')];
        if (batched.some((n) => n !== 10))
          wrong.push(`batch ${reserved}->${target}: ${batched.join(' ')}`);
        clock.advance(1);
      }
      expect(wrong).toEqual([]);
    },
  );

  it('concurrency: a refused stack or multi-key lease leaves no lease behind (Cluster compensation across slots)', async () => {
    const store = backend.store(new TestClock());
    const lease = new Limiter(store, {
      name: 'rv-comp-lease',
      algorithm: 'concurrency',
      limit: 1,
      window: '30s',
    });
    const rate = new Limiter(store, {
      name: 'rv-comp-rate',
      algorithm: 'fixed-window',
      limit: 1,
      window: '1h',
    });
    expect((await rate.consume('b')).allowed).toBe(true);
    const leaseFirst = await Limiter.consumeAll([
      { limiter: lease, keys: 'a' },
      { limiter: rate, keys: 'b' },
    ]);
    expect(leaseFirst.allowed).toBe(false);
    const rateFirst = await Limiter.consumeAll([
      { limiter: rate, keys: 'b' },
      { limiter: lease, keys: 'a' },
    ]);
    expect(rateFirst.allowed).toBe(false);
    expect((await lease.consume('a')).allowed).toBe(true);
    expect((await lease.consume(['x1', 'y2', 'z3'])).allowed).toBe(true);
    expect((await lease.consume(['p1', 'q2', 'z3'])).allowed).toBe(false);
    expect((await lease.consume(['p1', 'q2'])).allowed).toBe(true);
    const concurrent = await Promise.all(Array.from({ length: 20 }, () => lease.consume('m')));
    expect(concurrent.filter((d) => d.allowed)).toHaveLength(1);
  });

  // Fixed (found in review of d1eb33d): waitFor sleeps until retryAfterMs and rejects at once when that is
  // past maxWaitMs (lib/core/wait.ts), but for a `concurrency` policy retryAfterMs is only an upper
  // bound (the earliest lease *expiry*): a lease released 100 ms later is never waited for, so
  // waitFor on a lease (an outbound client "at most N in flight") rejects immediately. Fix: for
  // concurrency, do not reject on retryAfterMs > maxWaitMs; sleep a bounded backoff (with jitter,
  // within maxWaitMs) and try again, or wake on a release made through this process's limiter.
  it('concurrency: waitFor gets a slot released well within maxWaitMs', async () => {
    const limiter = new Limiter(backend.store(), {
      name: 'rv-wait-lease',
      algorithm: 'concurrency',
      limit: 1,
      window: '10s',
    });
    const held = await limiter.consume('k');
    const released = new Promise((resolve) => setTimeout(resolve, 100)).then(() =>
      limiter.release(held),
    );
    try {
      const turn = await limiter.waitFor('k', { maxWaitMs: 3_000 });
      expect(turn.allowed).toBe(true);
    } finally {
      await released;
    }
  });

  // Fixed (found in review of 846a7dc): Limiter.receiptOf (lib/core/limiter.ts ~line 296) checks a receipt's
  // spendId and resetMarks only. A receipt whose cost, at, keys, limits or algorithm is malformed
  // (a copy passed between processes, e.g. rebuilt from a queue message) reaches the store: Redis
  // answers with a script error ("ERR user_function:…: bad argument #2 to 'format'", "ERR
  // Function not found"), MemoryStore silently returns true, and a cost above the limit makes
  // the sliding-log scripts loop over it. DESIGN 4: bad input is a TypeError / RangeError naming
  // the argument, thrown before Redis is touched. Fix: validate receipt.cost (whole, 1..maxCost of
  // receipt.limits), at (safe integer), keys (non-empty strings), limits and algorithm in
  // receiptOf, for refund, adjust, release and extend alike.
  it('refund of a receipt with a malformed at or cost is refused before the store', async () => {
    const clock = new TestClock();
    clock.advance(1_000);
    const limiter = new Limiter(backend.store(clock), {
      name: 'rv-forged',
      algorithm: 'sliding-log',
      limit: 10,
      window: '1m',
    });
    const spent = await limiter.consume('k');
    const forged = (patch: object) => ({ ...spent.receipt, ...patch });
    await expect(limiter.refund(forged({ at: 'x' }))).rejects.toThrow(TypeError);
    await expect(limiter.refund(forged({ cost: -5 }))).rejects.toThrow(RangeError);
    await expect(limiter.adjust(forged({ cost: 1.5 }), 1)).rejects.toThrow(RangeError);
  });
});
