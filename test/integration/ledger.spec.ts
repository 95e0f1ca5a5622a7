import { type Algorithm, Limiter, type Receipt, RedisStore } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { ledgerKey, storageKey } from '../../lib/stores/storage-key.util';
import { clusterSlot } from '../../lib/stores/cluster-slot.util';
import { backends, TestClock } from '../support/backends';

const stores = backends('ledger', { nodeRedis: true });
const copy = (receipt: Receipt): Receipt => JSON.parse(JSON.stringify(receipt)) as Receipt;

describe.each(stores)('$name store: the refund ledger', (backend) => {
  it.each(ALGORITHMS)('%s: stays bounded however many refunds a key gets', async (algorithm) => {
    const clock = new TestClock();
    const store = backend.store(clock);
    const limiter = new Limiter(store, { name: 'signin', algorithm, limit: 5, window: '1h' });
    const receipts: Receipt[] = [];
    for (let i = 0; i < 600; i++) {
      clock.advance(1);
      const spent = await limiter.consume('ip:1'); // a sign-in…
      await limiter.refund(spent); // …that succeeded: free
      receipts.push(spent.receipt);
    }
    if (store instanceof RedisStore) {
      const size = await backend.client!.zcard(ledgerKey(store.prefix, 'ip:1', 'signin'));
      expect(size).toBeLessThanOrEqual(128); // 124 ids, and the reset, floor and life markers
    }
    // The oldest receipts fell off the ledger: copies of them give nothing back (the safe side).
    await limiter.consume('ip:1');
    for (const old of receipts.slice(0, 10)) await limiter.refund(copy(old));
    expect((await limiter.peek('ip:1')).remaining).toBe(5 - 1 - 1);
  });

  it('a copy of a receipt refunded before the ledger trimmed its instant gives nothing (spend at the floor)', async () => {
    // 300 spends in one millisecond, each refunded: more than the ledger keeps, so the oldest
    // ids go and the floor becomes that very instant (whatever the ledger's cap). Every one of
    // these receipts is at the floor, and those whose ids were trimmed are known only by it.
    // (Once the floor reached the instant, the later of these refunds gave nothing: the safe side.)
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'floor',
      algorithm: 'fixed-window',
      limit: 1_000,
      window: '1h',
    });
    const receipts: Receipt[] = [];
    for (let i = 0; i < 300; i++) {
      const spent = await limiter.consume('k');
      expect(spent.allowed).toBe(true);
      receipts.push(spent.receipt);
      await limiter.refund(spent);
    }
    clock.advance(1);
    for (let i = 0; i < 300; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    const before = (await limiter.peek('k')).remaining;
    expect(before).toBeLessThanOrEqual(700); // at least the 300 later spends weigh
    for (const receipt of receipts) await limiter.refund(copy(receipt));
    expect((await limiter.peek('k')).remaining).toBe(before);
  });

  it('a full ledger keeps its reset mark: a spend made after the reset still refunds', async () => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'full',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1h',
    });
    await limiter.reset('k');
    const after = await limiter.consume('k'); // in the reset's millisecond
    for (let i = 0; i < 124; i++) {
      clock.advance(1);
      await limiter.refund(await limiter.consume('k')); // 124 refunded ids: the ledger is full
    }
    await limiter.refund(after);
    expect((await limiter.peek('k')).remaining).toBe(4);
  });

  it.each(['token-bucket', 'gcra'] as Algorithm[])(
    '%s: a copy refunded again after the ledger’s lifetime gives nothing (a busy bucket)',
    async (algorithm) => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'busy',
        algorithm,
        limit: 10,
        window: 1_000,
        burst: 10,
      });
      await limiter.consume('k', { cost: 5 });
      clock.advance(1);
      const a = await limiter.consume('k');
      clock.advance(1);
      await limiter.consume('k');
      clock.advance(1);
      await limiter.refund(copy(a.receipt));
      clock.advance(497);
      await limiter.consume('k', { cost: 5 }); // keeps the bucket busy
      clock.advance(500);
      await limiter.consume('k', { cost: 5 });
      clock.advance(200);
      const before = await limiter.peek('k');
      await limiter.refund(copy(a.receipt));
      expect((await limiter.peek('k')).remaining).toBe(before.remaining);
    },
  );

  it.each(['token-bucket', 'gcra'] as Algorithm[])(
    '%s: a copy refunded at exactly the ledger’s last instant gives nothing again',
    async (algorithm) => {
      // 1 per 10 ms, burst 3: the ledger lives 30 ms, and so does a spend's weight.
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'edge',
        algorithm,
        limit: 1,
        window: 10,
        burst: 3,
      });
      const a = await limiter.consume('k');
      await limiter.consume('k', { cost: 2 });
      expect(await limiter.refund(a)).toBe(true);
      clock.advance(15);
      await limiter.consume('k', { cost: 2 }); // the bucket stays busy
      clock.advance(15); // exactly a.at + 30: the spend still counts, the ledger still holds it
      const before = await limiter.peek('k');
      await limiter.refund(copy(a.receipt));
      expect(await limiter.peek('k')).toEqual(before);
    },
  );

  it('a bucket refund after the clock stepped back is not mistaken for the latest spend', async () => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'step',
      algorithm: 'token-bucket',
      limit: 1,
      window: 1_000,
      burst: 10,
    });
    clock.advance(1_000);
    const first = await limiter.consume('k', { cost: 5 });
    clock.advance(4_900);
    await limiter.consume('k');
    clock.advance(-5_000); // the clock steps back
    await limiter.consume('k');
    await limiter.refund(first);
    // Backlog 7100 units before the refund; an earlier spend gives back at most the lowest
    // backlog seen before a later one (100): 7000, 3 tokens of room, 2 left after the peek's 1.
    // (Taken for the latest spend, it would give back all 5 tokens: 7 of room.)
    expect(await limiter.peek('k')).toMatchObject({ allowed: true, remaining: 2 });
  });

  it.each(['token-bucket', 'gcra'] as Algorithm[])(
    '%s: a spend of an earlier busy period refunds nothing after the clock stepped back',
    async (algorithm) => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'earlier',
        algorithm,
        limit: 1,
        window: 1_000,
        burst: 10,
      });
      const old = await limiter.consume('k', { cost: 3 });
      clock.advance(5_000); // full again: that busy period is over
      await limiter.consume('k', { cost: 2 }); // a new one begins
      clock.advance(-100); // the clock steps back, before the new period's start
      await limiter.consume('k', { cost: 2 });
      await limiter.refund(old); // from the earlier period: nothing to give back
      // Backlog 2000 + 100 (the step) + 2000 = 4100 units: 5 tokens of room, 4 after the peek.
      expect(await limiter.peek('k')).toMatchObject({ allowed: true, remaining: 4 });
    },
  );

  it('refund() of a spent receipt without its spendId is refused', async () => {
    const limiter = new Limiter(backend.store(), {
      name: 'id',
      algorithm: 'fixed-window',
      limit: 2,
      window: '1m',
    });
    const spent = await limiter.consume('k');
    const stripped: Receipt = { ...spent.receipt, spendId: undefined };
    await expect(limiter.refund(stripped)).rejects.toThrow(/spendId/);
  });
});

describe.each(stores)('$name store: the ledger remembers its longest lifetime', (backend) => {
  it('receipts of shorter windows, refunded one after another, never make it forget a live id', async () => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'ledger-life',
      algorithm: 'fixed-window',
      limit: 5,
      window: '2h',
    });
    clock.advance(10);
    const a = await limiter.consume('k');
    await limiter.refund(a);
    clock.advance(3_600_010); // more than an hour later, in the same two-hour window
    await limiter.consume('k');
    await limiter.consume('k'); // kept
    // Three spends refunded under one-hour limits (an older configuration): each write prunes by
    // the two hours the ledger was first written with, the later ones too.
    for (let i = 0; i < 3; i++) {
      clock.advance(1);
      const spent = await limiter.consume('k');
      const shortLived: Receipt = {
        ...copy(spent.receipt),
        limits: spent.receipt.limits.map((rule) => ({ ...rule, windowMs: 3_600_000 })),
      };
      expect(await limiter.refund(shortLived)).toBe(true);
    }
    // A copy of the first receipt, refunded long ago, still gives nothing back.
    const before = (await limiter.peek('k')).remaining;
    expect(before).toBeLessThan(5); // a wrong refund would show
    await limiter.refund(copy(a.receipt));
    expect((await limiter.peek('k')).remaining).toBe(before);
  });
});

describe.each(stores.filter((b) => b.name !== 'memory'))(
  '$name store: a written ledger expires with its newest entry',
  (backend) => {
    it('each registration moves the expiry on by the time since the last one', async () => {
      const clock = new TestClock();
      const store = backend.store(clock) as RedisStore;
      const limiter = new Limiter(store, {
        name: 'extend',
        algorithm: 'fixed-window',
        limit: 5,
        window: '1h',
      });
      const ledger = ledgerKey(store.prefix, 'k', 'extend');
      await limiter.begin('k');
      const first = await backend.client!.pexpiretime(ledger);
      expect(first).toBeGreaterThan(0);
      clock.advance(60_000);
      await limiter.begin('k');
      // (the expiry offset of a custom clock may move by a millisecond between calls)
      expect(await backend.client!.pexpiretime(ledger)).toBeGreaterThanOrEqual(first + 59_990);
      clock.advance(-30_000); // a clock that stepped back never shortens it
      await limiter.begin('k');
      expect(await backend.client!.pexpiretime(ledger)).toBeGreaterThanOrEqual(first + 59_990);
    });
  },
);

describe.each(stores.filter((b) => b.name !== 'memory'))(
  '$name store: reset leaves a ledger that expires (Redis clock)',
  (backend) => {
    it.each([false, true])(
      'the ledger holding the reset mark expires a lifetime after the reset (state before: %s)',
      async (withState) => {
        const store = backend.store() as RedisStore; // Redis clock: no expiry offset
        const limiter = new Limiter(store, {
          name: 'wipe',
          algorithm: 'fixed-window',
          limit: 5,
          window: '1h', // lifetime: one window
        });
        if (withState) await limiter.consume('k');
        await limiter.reset('k');
        const ledger = ledgerKey(store.prefix, 'k', 'wipe');
        const mark = Number(await backend.client!.zscore(ledger, 'reset')); // the reset's `now`
        expect(mark).toBeGreaterThan(0);
        // A ledger without an expiry would stay in Redis for good, one per caller key ever reset.
        expect(await backend.client!.pexpiretime(ledger)).toBe(mark + 3_600_000);
      },
    );
  },
);

describe('redis store: the deadline survives a Redis clock that steps forward', () => {
  const [redis] = stores;
  it('re-measures the clock from a late answer and tries once more in time', async () => {
    const store = redis!.store() as RedisStore;
    const limiter = new Limiter(
      store,
      { name: 'clock', algorithm: 'sliding-window', limit: 100, window: '1h' },
      { timeoutMs: 500 },
    );
    expect((await limiter.consume('k')).failure).toBeUndefined(); // clock measured
    // As if Redis's clock had jumped 3 s ahead since: our deadlines would all look past.
    const estimate = Reflect.get(store, 'redisClock') as { offsetMs: number };
    estimate.offsetMs -= 3_000;
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await limiter.consume('k'));
    expect(decisions.map((d) => d.failure?.reason)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe('redis cluster: a compensation writes no ledger', () => {
  const onCluster = stores.find((b) => b.name === 'cluster');
  (onCluster ? it : it.skip)(
    '50 calls refused by the later slot group leave the earlier group no ledger, and no charge',
    async () => {
      const store = onCluster!.store() as RedisStore;
      const limiter = new Limiter(store, {
        name: 'pair',
        algorithm: 'fixed-window',
        limit: 1,
        window: '1h',
      });
      const slot = (key: string) => clusterSlot(storageKey(store.prefix, key, 'pair', 0));
      const [first, later] = ['ip:203.0.113.7', 'email:5f4dcc3b5aa765d6'].sort(
        (a, b) => slot(a) - slot(b),
      );
      await limiter.consume(later!); // only the later group is exhausted: each call is charged, then compensated
      for (let i = 0; i < 50; i++)
        expect((await limiter.consume([first!, later!])).allowed).toBe(false);
      expect(await onCluster!.keys!(`${store.prefix}*:r`)).toEqual([]);
      expect((await limiter.peek(first!)).allowed).toBe(true);
    },
  );
});
