import type { Cluster, Redis } from 'ioredis';
import { type Algorithm, Limiter, type Receipt, RedisStore } from '../../lib';
import { storageKey } from '../../lib/stores/storage-key.util';
import { clusterSlot } from '../../lib/stores/cluster-slot.util';
import { backends, TestClock } from '../support/backends';

const stores = backends('clock', { nodeRedis: true });
const WINDOWED: Algorithm[] = ['fixed-window', 'sliding-window'];

describe.each(stores.filter((b) => b.name !== 'memory'))(
  '$name store: a custom wall clock',
  (backend) => {
    it.each([
      'fixed-window',
      'sliding-window',
      'token-bucket',
      'gcra',
      'sliding-log',
    ] as Algorithm[])(
      '%s: two stores whose clocks differ by 1 ms share one budget',
      async (algorithm) => {
        // Two hosts passing `clock: () => Date.now()`, one a millisecond behind the other.
        const first = backend.store() as RedisStore;
        const policy = { name: 'wall', algorithm, limit: 5, window: '7d' };
        const here = new Limiter(
          new RedisStore({
            client: backend.storeClient!,
            prefix: first.prefix,
            clock: () => Date.now(),
          }),
          policy,
        );
        const there = new Limiter(
          new RedisStore({
            client: backend.storeClient!,
            prefix: first.prefix,
            clock: () => Date.now() - 1,
          }),
          policy,
        );
        let admitted = 0;
        for (let i = 0; i < 20; i++) {
          if ((await (i % 2 ? there : here).consume('k')).allowed) admitted++;
        }
        expect(admitted).toBe(5);
      },
    );
  },
);

describe.each(stores)('$name store: a clock that steps back over a window edge', (backend) => {
  const setup = (algorithm: Algorithm) => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'step',
      algorithm,
      limit: 5,
      window: 1_000,
    });
    return { clock, limiter };
  };

  it.each(WINDOWED)('%s: the newer window is not erased', async (algorithm) => {
    const { clock, limiter } = setup(algorithm);
    clock.advance(1_001); // just past an edge
    for (let i = 0; i < 5; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    clock.advance(-3); // 2 ms before the edge: NTP stepped the clock back
    const behind = await limiter.consume('k');
    expect(behind.allowed).toBe(false);
    clock.advance(3);
    expect((await limiter.consume('k')).allowed).toBe(false);
    clock.advance(1);
    expect((await limiter.consume('k')).allowed).toBe(false);
  });

  it('fixed-window: Retry-After counts from the clock as it reads, to the newer window’s end', async () => {
    const { clock, limiter } = setup('fixed-window');
    clock.advance(1_001);
    for (let i = 0; i < 5; i++) await limiter.consume('k');
    clock.advance(-3); // reads 998: the window that holds the 5 spends ends at 2000
    const refused = await limiter.peek('k');
    expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 1_002 });
    clock.advance(1_001); // 1999
    expect((await limiter.consume('k')).allowed).toBe(false);
    clock.advance(1); // 2000
    expect((await limiter.consume('k')).allowed).toBe(true);
  });

  it.each(WINDOWED)(
    '%s: a spend made while the clock is behind refunds exactly',
    async (algorithm) => {
      const { clock, limiter } = setup(algorithm);
      clock.advance(1_001);
      for (let i = 0; i < 3; i++) await limiter.consume('k');
      clock.advance(-3);
      const before = await limiter.peek('k');
      const spent = await limiter.consume('k');
      expect(spent.allowed).toBe(true);
      expect(await limiter.refund(spent)).toBe(true);
      expect(await limiter.peek('k')).toEqual(before);
      clock.advance(10);
      expect((await limiter.peek('k')).remaining).toBe(5 - 3 - 1);
    },
  );

  it.each(WINDOWED)(
    '%s: a read-only peek with the clock behind keeps the newer window',
    async (algorithm) => {
      const { clock, limiter } = setup(algorithm);
      clock.advance(1_001);
      for (let i = 0; i < 5; i++) await limiter.consume('k');
      clock.advance(-3);
      expect((await limiter.peek('k')).allowed).toBe(false);
      clock.advance(3);
      expect((await limiter.peek('k')).allowed).toBe(false);
    },
  );
});

describe.each(stores.filter((b) => b.name !== 'memory'))(
  '$name store on Redis TIME: state written while TIME read later (it stepped back since)',
  (backend) => {
    const redisNow = async (key: string): Promise<number> => {
      const node =
        'nodes' in backend.client! ? clusterNodeFor(backend.client, key) : backend.client!;
      const [seconds, micros] = await node.time();
      return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    };

    it('fixed-window: a counter expiring at a later window’s end is kept, and refuses', async () => {
      const store = backend.store() as RedisStore;
      const limiter = new Limiter(store, {
        name: 'ahead',
        algorithm: 'fixed-window',
        limit: 5,
        window: 60_000,
      });
      const key = storageKey(store.prefix, 'k', 'ahead', 0);
      const before = await redisNow(key);
      const laterEnd = (Math.floor(before / 60_000) + 2) * 60_000; // the next window's end
      await backend.client!.set(key, '5', 'PXAT', laterEnd);
      const refused = await limiter.consume('k');
      const after = await redisNow(key);
      expect(refused.allowed).toBe(false);
      expect(refused.retryAfterMs).toBeGreaterThanOrEqual(laterEnd - after);
      expect(refused.retryAfterMs).toBeLessThanOrEqual(laterEnd - before);
      expect(await backend.client!.get(key)).toBe('5');
      expect(await backend.client!.pexpiretime(key)).toBe(laterEnd);
    });

    it('sliding-log: the log lives a window past its newest member, even one from a later reading', async () => {
      const store = backend.store() as RedisStore;
      const limiter = new Limiter(store, {
        name: 'ahead',
        algorithm: 'sliding-log',
        limit: 5,
        window: 60_000,
      });
      const key = storageKey(store.prefix, 'k', 'ahead', 0);
      const newest = (await redisNow(key)) + 5_000; // written when TIME read 5 s later
      // As a spend writes it: the member, and the log's expiry a window past it.
      await backend.client!.zadd(key, newest, 'earlier-spend');
      await backend.client!.pexpireat(key, newest + 60_000);
      await limiter.consume('k'); // reads TIME 5 s before the member: must not shorten its life
      expect(await backend.client!.pexpiretime(key)).toBe(newest + 60_000);
    });

    it('sliding-window: a later window’s counts are kept, and refuse', async () => {
      const store = backend.store() as RedisStore;
      const limiter = new Limiter(store, {
        name: 'ahead',
        algorithm: 'sliding-window',
        limit: 5,
        window: 60_000,
      });
      const key = storageKey(store.prefix, 'k', 'ahead', 0);
      const w = Math.floor((await redisNow(key)) / 60_000) + 1;
      await backend.client!.set(key, `${w}:5:0`, 'PXAT', (w + 2) * 60_000);
      expect((await limiter.consume('k')).allowed).toBe(false);
      expect(await backend.client!.get(key)).toBe(`${w}:5:0`);
    });
  },
);

/** The Cluster node that serves `key`'s slot. */
function clusterNodeFor(cluster: Cluster, key: string): Redis {
  const slot = clusterSlot(key);
  const node = cluster
    .nodes('master')
    .find((n) => (cluster.slots[slot] ?? []).includes(`${n.options.host}:${n.options.port}`));
  return node ?? cluster.nodes('master')[0]!;
}

describe.each(stores)('$name store: refunds and ledgers across a clock step back', (backend) => {
  it.each(['token-bucket', 'gcra'] as Algorithm[])(
    '%s: a spend made on a clock behind the busy period’s start refunds',
    async (algorithm) => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'behind',
        algorithm,
        limit: 5,
        window: 1_000,
      });
      await limiter.consume('k');
      clock.advance(-1); // another host, 1 ms behind
      const spent = await limiter.consume('k');
      const before = (await limiter.peek('k')).remaining;
      expect(await limiter.refund(spent)).toBe(true);
      expect((await limiter.peek('k')).remaining).toBe(before + 1);
    },
  );

  it.each(WINDOWED)(
    '%s: a window the clock had passed still counts when it steps back into it',
    async (algorithm) => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'back',
        algorithm,
        limit: 2,
        window: 1_000,
      });
      clock.advance(990);
      await limiter.consume('k');
      clock.advance(algorithm === 'sliding-window' ? 1_020 : 20); // past the state's expiry
      await limiter.peek('k');
      clock.advance(-15); // back into the window that holds the spend
      expect((await limiter.consume('k')).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
    },
  );

  it('a ledger written while the clock is behind lives as long as the spend it guards', async () => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'ledger',
      algorithm: 'fixed-window',
      limit: 3,
      window: 1_000,
    });
    clock.advance(1_005);
    const first = await limiter.consume('k');
    const copy = JSON.parse(JSON.stringify(first.receipt)) as Receipt;
    await limiter.consume('k');
    clock.advance(-15);
    expect(await limiter.refund(first)).toBe(true);
    clock.advance(1_005); // 1995: still in the window of the spend (1000–2000)
    await limiter.refund(copy); // refunded already: nothing
    const admitted = [];
    for (let i = 0; i < 4; i++) admitted.push((await limiter.consume('k')).allowed);
    expect(admitted).toEqual([true, true, false, false]);
  });
});

describe.each(stores)('$name store: reset marks across a long clock step back', (backend) => {
  it('a reset after the clock stepped back still wipes spends made before it', async () => {
    const clock = new TestClock();
    const policy = { name: 'marks', algorithm: 'token-bucket', limit: 5, window: 1_000 } as const;
    const limiter = new Limiter(backend.store(clock), policy); // lifetime: 1000 ms
    await limiter.reset('k');
    const before = await limiter.consume('k'); // after that reset: refundable so far
    clock.advance(1_100);
    await limiter.refund(await limiter.consume('k')); // the ledger prunes what is a lifetime old
    clock.advance(-1_200); // the clock steps back a lifetime and more
    await limiter.reset('k');
    await limiter.consume('k', { cost: 2 });
    const left = await limiter.peek('k');
    await limiter.refund(before); // charged before the second reset: nothing to give back
    expect(await limiter.peek('k')).toEqual(left);
  });
});
