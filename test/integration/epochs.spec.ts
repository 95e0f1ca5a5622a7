import fc from 'fast-check';
import Redis from 'ioredis';
import { Limiter, MemoryStore, RedisStore, type Store } from '../../lib';
import { epochKey } from '../../lib/stores/storage-key.util';
import { backends, TestClock } from '../support/backends';
import { createTestClient, uniquePrefix } from '../support/redis';

const stores = backends('epochs', { nodeRedis: true });
const RUNS = Number(process.env.REDLIMIT_PROPERTY_RUNS ?? 40);
const DAY = 86_400_000;
const LOGIN = 'email:5f4dcc3b5aa765d6';

/** The epoch operations, which every store under test has. */
type EpochStore = Store & Required<Pick<Store, 'readEpoch' | 'bumpEpoch'>>;

const epochs = (store: Store): EpochStore => store as EpochStore;

describe.each(stores)('$name store: device epochs', (backend) => {
  const setup = () => {
    const clock = new TestClock();
    const store = epochs(backend.store(clock));
    /** The Redis key of an epoch, or undefined on MemoryStore. */
    const stored = (key: string) =>
      store instanceof RedisStore ? epochKey(store.prefix, key) : undefined;
    const pttl = (key: string) => backend.client!.pttl(stored(key)!);
    return { clock, store, stored, pttl };
  };

  it('reads 0 for a login never bumped, and writes nothing', async () => {
    const { store, stored } = setup();
    expect((await store.readEpoch(LOGIN, 30 * DAY)).epoch).toBe(0);
    expect((await store.readEpoch(LOGIN, 30 * DAY)).epoch).toBe(0);
    if (stored(LOGIN)) expect(await backend.client!.exists(stored(LOGIN)!)).toBe(0);
  });

  it('bumps 1, 2, 3 and reads the latest; each login has its own epoch', async () => {
    const { store } = setup();
    expect(await store.bumpEpoch(LOGIN, DAY)).toBe(1);
    expect(await store.bumpEpoch(LOGIN, DAY)).toBe(2);
    expect(await store.bumpEpoch(LOGIN, DAY)).toBe(3);
    expect((await store.readEpoch(LOGIN, DAY)).epoch).toBe(3);
    expect((await store.readEpoch('email:other', DAY)).epoch).toBe(0);
    expect(await store.bumpEpoch('email:other', DAY)).toBe(1);
    expect((await store.readEpoch(LOGIN, DAY)).epoch).toBe(3);
  });

  it('keys with braces, a leading # or 200 characters are epochs of their own', async () => {
    const { store } = setup();
    const keys = ['a{b}', '{a}b', '#x', 'x'.repeat(200), 'x'.repeat(201), 'ä', 'y'.repeat(10_000)];
    for (const [i, key] of keys.entries()) {
      for (let n = 0; n <= i; n++) await store.bumpEpoch(key, DAY);
    }
    for (const [i, key] of keys.entries())
      expect((await store.readEpoch(key, DAY)).epoch).toBe(i + 1);
    if (store instanceof RedisStore) {
      // Stored names stay bounded whatever the key's length (a long key is stored as its hash).
      const names = await backend.keys!(`${store.prefix}epoch:*`);
      expect(names).toHaveLength(keys.length);
      for (const name of names) expect(name.length).toBeLessThan(store.prefix.length + 70);
    }
  });

  it('lives apart from limiter state under the same key: neither consume nor reset touches it', async () => {
    const { store } = setup();
    const limiter = new Limiter(store, {
      name: 'epoch',
      algorithm: 'fixed-window',
      limit: 2,
      window: '1m',
    });
    await store.bumpEpoch(LOGIN, DAY);
    await limiter.consume(LOGIN);
    await limiter.consume(LOGIN);
    expect((await limiter.consume(LOGIN)).allowed).toBe(false);
    expect((await store.readEpoch(LOGIN, DAY)).epoch).toBe(1);
    await limiter.reset(LOGIN);
    expect((await store.readEpoch(LOGIN, DAY)).epoch).toBe(1);
    expect(await store.bumpEpoch(LOGIN, DAY)).toBe(2);
    expect((await limiter.consume(LOGIN)).allowed).toBe(true);
  });

  it('100 concurrent bumps get the epochs 1..100, each exactly once', async () => {
    const { store } = setup();
    const bumped = await Promise.all(
      Array.from({ length: 100 }, () => store.bumpEpoch(LOGIN, DAY)),
    );
    expect([...bumped].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect((await store.readEpoch(LOGIN, DAY)).epoch).toBe(100);
  });

  it.each([
    ['an empty key', '', DAY, TypeError, /key must be a non-empty string/],
    ['a non-string key', 42, DAY, TypeError, /key must be a non-empty string; got number/],
    ['a lone surrogate', 'email:\ud800', DAY, TypeError, /well-formed UTF-16/],
    ['keepMs 0', LOGIN, 0, RangeError, /keepMs must be a whole number of ms from 1/],
    ['a fractional keepMs', LOGIN, 1.5, RangeError, /keepMs/],
    ['keepMs NaN', LOGIN, NaN, RangeError, /keepMs/],
    ['keepMs as a string', LOGIN, '1000', RangeError, /keepMs/],
    ['keepMs past 366 days', LOGIN, 366 * DAY + 1, RangeError, /366 days/],
  ])(
    '%s is an error naming it, before the store is touched',
    async (_what, key, keepMs, type, message) => {
      const { store, stored } = setup();
      for (const operation of ['readEpoch', 'bumpEpoch'] as const) {
        const pending = store[operation](key as string, keepMs as number);
        await expect(pending).rejects.toBeInstanceOf(type);
        await expect(pending).rejects.toThrow(message);
        await expect(pending).rejects.toThrow(new RegExp(`^${operation}\\(\\): `));
      }
      if (typeof key === 'string' && key !== '' && stored(key)) {
        expect(await backend.client!.exists(stored(key)!)).toBe(0);
      }
      expect((await store.readEpoch(LOGIN, DAY)).epoch).toBe(0);
    },
  );

  it('366 days is the longest keepMs', async () => {
    const { store } = setup();
    expect(await store.bumpEpoch(LOGIN, 366 * DAY)).toBe(1);
  });

  if (backend.name === 'memory') {
    it('expires keepMs after the last bump or read on the store’s clock, never sooner', async () => {
      const { clock, store } = setup();
      await store.bumpEpoch(LOGIN, 10_000);
      clock.advance(6_000);
      expect((await store.readEpoch(LOGIN, 10_000)).epoch).toBe(1); // now kept until 16 000
      clock.advance(9_000);
      expect((await store.readEpoch(LOGIN, 1)).epoch).toBe(1); // a shorter keep does not shorten it
      clock.advance(999);
      expect((await store.readEpoch(LOGIN, 1)).epoch).toBe(1); // kept until 16 000 still
      clock.advance(2);
      expect((await store.readEpoch(LOGIN, 10_000)).epoch).toBe(0);
      expect(await store.bumpEpoch(LOGIN, 10_000)).toBe(1); // an expired epoch starts again
    });

    it('a bump keeps the later of its keep and the current expiry', async () => {
      const { clock, store } = setup();
      await store.bumpEpoch(LOGIN, 60_000);
      await store.bumpEpoch(LOGIN, 1_000);
      clock.advance(60_000); // exactly at its expiry: still there, as in Redis (and kept 1 ms more)
      expect((await store.readEpoch(LOGIN, 1)).epoch).toBe(2);
      clock.advance(2);
      expect((await store.readEpoch(LOGIN, 1)).epoch).toBe(0);
    });
  } else {
    it('expiry: set to keepMs, extended by a longer read or bump, never shortened', async () => {
      const { store, pttl } = setup();
      await store.bumpEpoch(LOGIN, 10_000);
      expect(await pttl(LOGIN)).toBeGreaterThan(9_000);
      expect(await pttl(LOGIN)).toBeLessThanOrEqual(10_000);
      expect((await store.readEpoch(LOGIN, 60_000)).epoch).toBe(1);
      expect(await pttl(LOGIN)).toBeGreaterThan(59_000);
      expect((await store.readEpoch(LOGIN, 1_000)).epoch).toBe(1);
      expect(await store.bumpEpoch(LOGIN, 2_000)).toBe(2);
      expect(await pttl(LOGIN)).toBeGreaterThan(59_000);
      expect(await store.bumpEpoch(LOGIN, 30 * DAY)).toBe(3);
      expect(await pttl(LOGIN)).toBeGreaterThan(30 * DAY - 1_000);
    });

    it('an epoch without an expiry (written by hand) gets one when read', async () => {
      const { store, stored, pttl } = setup();
      await backend.client!.set(stored(LOGIN)!, '7');
      expect((await store.readEpoch(LOGIN, 5_000)).epoch).toBe(7);
      expect(await pttl(LOGIN)).toBeGreaterThan(4_000);
      expect(await pttl(LOGIN)).toBeLessThanOrEqual(5_000);
    });

    it('an expired epoch is gone: read 0, the next bump is 1', async () => {
      const { store, stored } = setup();
      await store.bumpEpoch(LOGIN, DAY);
      await backend.client!.pexpire(stored(LOGIN)!, 1);
      // The key's own expiry passes on the Redis clock; poll it, never longer than a second.
      for (let i = 0; i < 100 && (await backend.client!.exists(stored(LOGIN)!)) === 1; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect((await store.readEpoch(LOGIN, DAY)).epoch).toBe(0);
      expect(await store.bumpEpoch(LOGIN, DAY)).toBe(1);
    });

    it('something else stored under the epoch key is an error, not an epoch', async () => {
      const { store, stored } = setup();
      await backend.client!.set(stored(LOGIN)!, 'trusted');
      await expect(store.readEpoch(LOGIN, DAY)).rejects.toThrow(/no device epoch/);
      await expect(store.bumpEpoch(LOGIN, DAY)).rejects.toThrow(/not an integer/);
    });
  }
});

describe('device epochs on a failing store', () => {
  it('RedisStore rejects when Redis cannot be reached (the caller trusts no device then)', async () => {
    const client = new Redis({
      port: 1,
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => undefined);
    const store = new RedisStore({ client, prefix: uniquePrefix('epochs') });
    await expect(store.readEpoch(LOGIN, DAY)).rejects.toThrow();
    await expect(store.bumpEpoch(LOGIN, DAY)).rejects.toThrow();
    client.disconnect();
  });

  it('MemoryStore rejects when its clock is broken', async () => {
    let reading = TestClock.BASE;
    const store = new MemoryStore({ clock: () => reading });
    reading = NaN;
    await expect(store.readEpoch(LOGIN, DAY)).rejects.toThrow(/clock/);
    await expect(store.bumpEpoch(LOGIN, DAY)).rejects.toThrow(/clock/);
  });
});

describe('MemoryStore device epochs are bounded', () => {
  it('a flood of limiter keys never pushes an epoch out', async () => {
    const store = new MemoryStore({ maxKeys: 10 });
    const limiter = new Limiter(store, {
      name: 'flood',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1m',
    });
    expect(await store.bumpEpoch(LOGIN, DAY)).toBe(1);
    for (let i = 0; i < 100; i++) await limiter.consume(`ip:10.0.0.${i}`);
    expect((await store.readEpoch(LOGIN, DAY)).epoch).toBe(1);
  });

  it('at most maxKeys epochs are kept: past it the ones used longest ago are forgotten', async () => {
    const store = new MemoryStore({ maxKeys: 100 });
    for (let i = 0; i < 150; i++) await store.bumpEpoch(`email:${i}`, DAY);
    const kept = await Promise.all(
      Array.from({ length: 150 }, async (_, i) => (await store.readEpoch(`email:${i}`, DAY)).epoch),
    );
    expect(kept.filter((epoch) => epoch === 1).length).toBeLessThanOrEqual(100);
    expect(kept[149]).toBe(1); // the latest are kept
    expect(kept[0]).toBe(0);
  });
});

describe('device epochs: MemoryStore and RedisStore agree', () => {
  let client: Redis;
  beforeAll(async () => {
    client = createTestClient();
    await Promise.all(Array.from({ length: 20 }, () => client.ping()));
  });
  afterAll(() => client.quit());

  type Op = { kind: 'read' | 'bump'; key: number; keepMs: number };
  const op: fc.Arbitrary<Op> = fc.record({
    kind: fc.constantFrom('read' as const, 'bump' as const),
    key: fc.integer({ min: 0, max: 2 }),
    // Long enough that nothing expires on Redis (real time) while a run lasts.
    keepMs: fc.oneof(fc.integer({ min: 60_000, max: 3_600_000 }), fc.constant(366 * DAY)),
  });

  it('on random reads and bumps: the same epochs, and the same expiries (Redis PTTL, Memory clock)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 30 }), async (ops) => {
        const clock = new TestClock();
        const memory = new MemoryStore({ clock: clock.read });
        const redis = new RedisStore({ client, prefix: uniquePrefix('epochs-diff') });
        const keys = ['email:a', 'email:b', '{x}'];
        for (const { kind, key, keepMs } of ops) {
          const onMemory =
            kind === 'read'
              ? (await memory.readEpoch(keys[key]!, keepMs)).epoch
              : await memory.bumpEpoch(keys[key]!, keepMs);
          const onRedis =
            kind === 'read'
              ? (await redis.readEpoch(keys[key]!, keepMs)).epoch
              : await redis.bumpEpoch(keys[key]!, keepMs);
          expect(onRedis).toBe(onMemory);
        }
        // Expiries: Redis's PTTL against the instant the MemoryStore forgets the epoch.
        const ttls = await Promise.all(keys.map((key) => client.pttl(epochKey(redis.prefix, key))));
        for (const [i, key] of keys.entries()) {
          const ttl = ttls[i]!;
          if (ttl === -2) {
            expect((await memory.readEpoch(key, 1)).epoch).toBe(0);
            continue;
          }
          expect(ttl).toBeGreaterThan(0);
          // Redis's clock ran a few ms during the run; the memory clock stood still.
          // The longest keep from the first bump on (a read of no epoch keeps nothing).
          const own = ops.filter((o) => o.key === i);
          const expected = own
            .slice(own.findIndex((o) => o.kind === 'bump'))
            .reduce((longest, o) => Math.max(longest, o.keepMs), 0);
          expect(ttl).toBeLessThanOrEqual(expected);
          expect(ttl).toBeGreaterThan(expected - 5_000);
          // Alive at its expiry instant (that read keeps it 1 ms more), gone after.
          const at = clock.now;
          clock.now = at + expected;
          expect((await memory.readEpoch(key, 1)).epoch).toBeGreaterThan(0);
          clock.now = at + expected + 2;
          expect((await memory.readEpoch(key, 1)).epoch).toBe(0);
          clock.now = at;
        }
      }),
      { numRuns: RUNS },
    );
  });
});
