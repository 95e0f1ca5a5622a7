import {
  type Algorithm,
  type Attempt,
  Limiter,
  RateLimitedError,
  type Receipt,
  RedisStore,
} from '../../lib';
import { ledgerKey, storageKey } from '../../lib/stores/storage-key.util';
import { clusterSlot } from '../../lib/stores/cluster-slot.util';
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
      await limiter.consume('k', { cost: 10 }); // held throughout: the state is never emptied
      const long = await limiter.begin('k', { cost: 3 });
      await quickPairs(limiter, clock, 'k', 127);
      clock.advance(1);
      const before = await remaining(limiter, 'k');
      long.refund();
      await long.settle();
      expect(await remaining(limiter, 'k')).toBe(before + 3);
      // 130 more refunds trim its own id from the ledger: a copy of its receipt gives nothing.
      await quickPairs(limiter, clock, 'k', 130);
      await limiter.consume('k', { cost: 20 }); // kept: what a second refund would come off
      const after = await remaining(limiter, 'k');
      expect(await limiter.refund(copy(long.decision.receipt))).toBe(true); // sent…
      expect(await remaining(limiter, 'k')).toBe(after); // …and refused by the ledger
    },
  );

  it.each(ALL)(
    '%s: a Limiter.beginAll() spend older than 127 later refunds refunds exactly its cost on every part, once',
    async (algorithm) => {
      const clock = new TestClock();
      const limiter = limiterOn(backend, algorithm, clock);
      const other = new Limiter(limiter.store, {
        name: 'floor.other',
        algorithm: 'fixed-window',
        limit: 1_000,
        window: '1h',
      });
      await limiter.consume('k', { cost: 10 }); // held throughout: the state is never emptied
      await other.consume('d', { cost: 10 });
      const long = await Limiter.beginAll([
        { limiter, keys: 'k', cost: 3 },
        { limiter: other, keys: 'd', cost: 2 },
      ]);
      await quickPairs(limiter, clock, 'k', 127);
      await quickPairs(other, clock, 'd', 127);
      clock.advance(1);
      const before = [await remaining(limiter, 'k'), await remaining(other, 'd')];
      long.refund();
      await long.settle();
      expect([await remaining(limiter, 'k'), await remaining(other, 'd')]).toEqual([
        before[0]! + 3,
        before[1]! + 2,
      ]);
      // Trimmed since: copies of its receipts give nothing.
      await quickPairs(limiter, clock, 'k', 130);
      await limiter.consume('k', { cost: 20 });
      const after = await remaining(limiter, 'k');
      await limiter.refund(copy(long.stacked!.decisions[0]!.receipt));
      expect(await remaining(limiter, 'k')).toBe(after);
    },
  );

  it.each(WINDOWS)(
    '%s: adjust() of a begin() spend after 200 later adjustments settles to the actual cost, once',
    async (algorithm) => {
      const clock = new TestClock();
      const limiter = limiterOn(backend, algorithm, clock);
      await limiter.consume('k', { cost: 10 }); // held throughout: the state is never emptied
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
      await limiter.consume('k', { cost: 20 }); // kept: what a second refund would come off
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
    const slot = (key: string) => clusterSlot(storageKey('', key, 'floor', 0));
    expect(slot(keys[0]!)).not.toBe(slot(keys[1]!));
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
    await limiter.consume('k', { cost: 10 }); // held throughout: the state is never emptied
    const attempts = await Promise.all([1, 2, 3, 4].map((cost) => limiter.begin('k', { cost })));
    await quickPairs(limiter, clock, 'k', 127);
    const before = await remaining(limiter, 'k');
    for (const attempt of attempts) {
      attempt.refund();
      await attempt.settle();
    }
    expect(await remaining(limiter, 'k')).toBe(before + 10);
    await quickPairs(limiter, clock, 'k', 130);
    await limiter.consume('k', { cost: 20 }); // kept: what a second refund would come off
    const after = await remaining(limiter, 'k');
    for (const attempt of attempts) await limiter.refund(copy(attempt.decision.receipt));
    expect(await remaining(limiter, 'k')).toBe(after);
  });

  it('a begin() spend made before a reset refunds nothing, registered or not', async () => {
    const clock = new TestClock();
    const limiter = limiterOn(backend, 'fixed-window', clock);
    const before = await limiter.begin('k', { cost: 5 });
    clock.advance(1);
    await limiter.reset('k');
    await quickPairs(limiter, clock, 'k', 127);
    await limiter.consume('k', { cost: 5 }); // kept: what a wrong refund would come off
    expect(await remaining(limiter, 'k')).toBe(994);
    before.refund();
    await before.settle();
    expect(await remaining(limiter, 'k')).toBe(994);
  });

  it('registrations stay within the budget: settled ones leave, refused begin()s write none', async () => {
    const clock = new TestClock();
    const store = backend.store(clock);
    const limiter = new Limiter(store, {
      name: 'signin',
      algorithm: 'sliding-window',
      limit: 5,
      window: '15m',
    });
    // 600 sign-ins that succeed (refunded) and 600 settled to nothing (adjusted to 0)…
    for (let i = 0; i < 1_200; i++) {
      clock.advance(1);
      const attempt = await limiter.begin('ip:1');
      if (i % 2 === 0) attempt.refund();
      else attempt.adjust(0);
      await attempt.settle();
    }
    // …then 5 that fail (kept) and 50 refused: 5 registrations stay, for the 5 spends that hold
    // the budget.
    const failed: Attempt[] = [];
    for (let i = 0; i < 5; i++) failed.push(await limiter.begin('ip:1'));
    for (let i = 0; i < 50; i++) {
      await expect(limiter.begin('ip:1')).rejects.toBeInstanceOf(RateLimitedError);
    }
    if (store instanceof RedisStore) {
      const ledger = ledgerKey(store.prefix, 'ip:1', 'signin');
      const members = await backend.client!.zrange(ledger, 0, -1);
      expect(members.filter((m) => m.startsWith('+'))).toHaveLength(5);
      expect(members.length).toBeLessThanOrEqual(128);
      expect(await backend.client!.call('OBJECT', 'ENCODING', ledger)).toBe('listpack');
    } else {
      // MemoryStore keeps the same members (white box: its table's entry for the key's ledger).
      const entries = Reflect.get(Reflect.get(store, 'table') as object, 'entries') as Map<
        string,
        { value: { members: Map<string, number> } }
      >;
      const members = [...entries.get(ledgerKey('', 'ip:1', 'signin'))!.value.members.keys()];
      expect(members.filter((m) => m.startsWith('+'))).toHaveLength(5);
      expect(members.length).toBeLessThanOrEqual(124);
    }
    // Each of them still refunds exactly once, past a floor that has moved far beyond them.
    for (const attempt of failed) {
      attempt.refund();
      await attempt.settle();
      await limiter.refund(copy(attempt.decision.receipt));
    }
    expect(await remaining(limiter, 'ip:1')).toBe(4);
  });

  it('more unsettled begin()s than the cap: the ledger stays a listpack, the oldest registrations go, and nothing refunds twice', async () => {
    const clock = new TestClock();
    const store = backend.store(clock);
    const limiter = new Limiter(store, {
      name: 'open',
      algorithm: 'fixed-window',
      limit: 1_000,
      window: '1h',
    });
    await limiter.consume('k', { cost: 10 }); // held throughout
    const adjusted = await limiter.begin('k', { cost: 5 });
    await limiter.adjust(adjusted.decision, 2); // registered as adjusted: "+<id>=2"
    const open: Attempt[] = [];
    for (let i = 0; i < 130; i++) {
      clock.advance(1);
      open.push(await limiter.begin('k'));
    }
    if (store instanceof RedisStore) {
      const ledger = ledgerKey(store.prefix, 'k', 'open');
      expect(await backend.client!.zcard(ledger)).toBeLessThanOrEqual(128);
      expect(await backend.client!.call('OBJECT', 'ENCODING', ledger)).toBe('listpack');
    }
    const base = await remaining(limiter, 'k'); // 1000 - 10 - 2 - 130 - 1
    expect(base).toBe(857);
    // The adjusted registration went first and raised the floor: its refund is lost (the safe
    // side), never given back at the reserved cost.
    await limiter.refund(copy(adjusted.decision.receipt));
    expect(await remaining(limiter, 'k')).toBe(base);
    // The oldest plain registrations went without raising the floor: every open spend still
    // refunds exactly once, copies nothing.
    for (const attempt of open) {
      attempt.refund();
      await attempt.settle();
      await limiter.refund(copy(attempt.decision.receipt));
    }
    expect(await remaining(limiter, 'k')).toBe(base + 130);
  });

  it('registrations of spends past the lifetime leave the ledger with the next write', async () => {
    const clock = new TestClock();
    const store = backend.store(clock);
    const limiter = new Limiter(store, {
      name: 'stale',
      algorithm: 'fixed-window',
      limit: 1_000,
      window: '1m', // lifetime: one minute
    });
    for (let i = 0; i < 100; i++) await limiter.begin('k'); // kept: registered, never settled
    clock.advance(60_001);
    const fresh = await limiter.begin('k');
    const registrations = async () => {
      if (store instanceof RedisStore) {
        const members = await backend.client!.zrange(ledgerKey(store.prefix, 'k', 'stale'), 0, -1);
        return members.filter((m) => m.startsWith('+'));
      }
      const entries = Reflect.get(Reflect.get(store, 'table') as object, 'entries') as Map<
        string,
        { value: { members: Map<string, number> } }
      >;
      const members = [...entries.get(ledgerKey('', 'k', 'stale'))!.value.members.keys()];
      return members.filter((m) => m.startsWith('+'));
    };
    expect(await registrations()).toEqual([`+${fresh.decision.receipt.spendId!}`]);
  });

  it('members past the lifetime are pruned before the cap is counted: fresh ids are not trimmed for them', async () => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'prune',
      algorithm: 'fixed-window',
      limit: 1_000,
      window: '1m', // lifetime: one minute
    });
    for (let i = 0; i < 100; i++) await limiter.begin('k'); // kept: registered, never settled
    clock.advance(60_001); // all 100 just past the lifetime
    const plain = await limiter.consume('k', { cost: 3 }); // not registered: judged by the floor
    // 30 refunded ids: 130 members, over the cap, if the 100 were counted; their trim would
    // raise the floor past the plain spend.
    await quickPairs(limiter, clock, 'k', 30);
    const before = await remaining(limiter, 'k');
    expect(await limiter.refund(plain)).toBe(true);
    expect(await remaining(limiter, 'k')).toBe(before + 3);
  });

  it('a longer lifetime written later does not bring back members an earlier write pruned', async () => {
    const clock = new TestClock();
    const store = backend.store(clock);
    const policy = { name: 'grow', algorithm: 'fixed-window', limit: 1_000 } as const;
    const short = new Limiter(store, { ...policy, window: '1m' }); // lifetime: one minute
    const long = new Limiter(store, { ...policy, window: '1h' }); // a later configuration
    for (let i = 0; i < 100; i++) await short.begin('k'); // kept: registered, never settled
    clock.advance(65_000);
    await short.begin('k'); // its write prunes the 100, past the minute
    const plain = await long.consume('k', { cost: 3 }); // not registered: judged by the floor
    // The ledger is now written with an hour's lifetime: the 100 are gone for good, and 31
    // members stay under the cap (no trim, no floor).
    await quickPairs(long, clock, 'k', 30);
    const before = await remaining(long, 'k');
    expect(await long.refund(plain)).toBe(true);
    expect(await remaining(long, 'k')).toBe(before + 3);
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

describe('redis cluster: a compensated begin() leaves no registration', () => {
  const onCluster = stores.find((b) => b.name === 'cluster');
  (onCluster ? it : it.skip)(
    '50 begin()s refused by the later slot group leave the earlier group no registered spend, and no charge',
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
      await limiter.consume(later!); // only the later group is exhausted
      for (let i = 0; i < 50; i++) {
        await expect(limiter.begin([first!, later!])).rejects.toBeInstanceOf(RateLimitedError);
      }
      const members = await onCluster!.client!.zrange(
        ledgerKey(store.prefix, first!, 'pair'),
        0,
        -1,
      );
      expect(members.filter((m) => m.startsWith('+'))).toEqual([]);
      expect((await limiter.peek(first!)).allowed).toBe(true);
    },
  );
});
