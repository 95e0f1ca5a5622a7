import fc from 'fast-check';
import {
  type Algorithm,
  type Decision,
  Limiter,
  MemoryStore,
  RedisStore,
  type Store,
} from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { backends, TestClock } from '../support/backends';

const stores = backends('grant');

/** Units left now, read without spending (a peek's `remaining` is as if one unit were spent). */
const left = async (limiter: Limiter, keys: string | string[]) => {
  const peeked = await limiter.peek(keys);
  return peeked.allowed ? peeked.remaining + 1 : peeked.remaining;
};

describe.each(stores)('$name store: grant gives room now', (backend) => {
  describe.each(ALGORITHMS)('%s', (algorithm: Algorithm) => {
    const setup = (limit = 10) => {
      const clock = new TestClock();
      clock.advance(1_000); // inside a window, not on its boundary
      const limiter = new Limiter(backend.store(clock), {
        name: 'grant',
        algorithm,
        limit,
        window: '1m',
      });
      return { clock, limiter };
    };

    it('a full key gets exactly the units granted, then is refused again', async () => {
      const { limiter } = setup();
      expect((await limiter.consume('k', { cost: 10 })).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
      await limiter.grant('k', 3);
      expect(await left(limiter, 'k')).toBe(3);
      for (let i = 0; i < 3; i++) expect((await limiter.consume('k')).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
    });

    it('never beyond an empty state: a fresh key keeps its limit, a grant above what was spent empties it', async () => {
      const { limiter } = setup();
      await limiter.grant('fresh', 5);
      expect(await left(limiter, 'fresh')).toBe(10);
      await limiter.consume('k', { cost: 4 });
      await limiter.grant('k', 9);
      expect(await left(limiter, 'k')).toBe(10);
      expect((await limiter.consume('k', { cost: 10 })).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
    });

    it('every key and every limit of the policy gets the room', async () => {
      const clock = new TestClock();
      clock.advance(1_000);
      const limiter = new Limiter(backend.store(clock), {
        name: 'grant2',
        algorithm,
        limits: [
          { limit: 5, window: '1m' },
          { limit: 8, window: '1h' },
        ],
      });
      await limiter.consume(['a', 'b'], { cost: 5 });
      await limiter.grant(['a', 'b'], 2);
      expect(await left(limiter, 'a')).toBe(2);
      expect(await left(limiter, 'b')).toBe(2);
      // The hour had 3 left: 5 now, so two spends of 2 leave 1 under the minute's 5.
      expect((await limiter.consume(['a', 'b'], { cost: 2 })).allowed).toBe(true);
      expect(await left(limiter, 'a')).toBe(0);
    });

    it('a receipt refunded after a grant gives back at most what it took, never beyond empty', async () => {
      const { limiter } = setup();
      const spends: Decision[] = [];
      for (let i = 0; i < 10; i++) spends.push(await limiter.consume('k'));
      await limiter.grant('k', 10);
      expect(await left(limiter, 'k')).toBe(10);
      for (const spend of spends) await limiter.refund(spend);
      expect(await left(limiter, 'k')).toBe(10);
      expect((await limiter.consume('k', { cost: 10 })).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
    });

    it('a grant does not lift a lockout', async () => {
      const clock = new TestClock();
      clock.advance(1_000);
      const limiter = new Limiter(backend.store(clock), {
        name: 'grant-block',
        algorithm,
        limit: 2,
        window: '1m',
        block: { duration: '10m' },
      });
      await limiter.consume('k', { cost: 2 });
      const refused = await limiter.consume('k');
      expect(refused.allowed).toBe(false);
      await limiter.grant('k', 2);
      const still = await limiter.consume('k');
      expect(still.allowed).toBe(false);
      expect(still.blockedUntil).toBeDefined();
      await limiter.reset('k');
      expect((await limiter.consume('k')).allowed).toBe(true);
    });
  });

  it('a concurrency policy refuses a grant before the store is touched', async () => {
    const limiter = new Limiter(backend.store(), {
      name: 'leases',
      algorithm: 'concurrency',
      limit: 2,
      window: '1m',
    });
    await expect(limiter.grant('k', 1)).rejects.toThrow(
      "grant(): policy 'leases' leases (concurrency): free a lease by its receipt (release)",
    );
  });
});

describe('grant: bad input is refused before the store is touched', () => {
  const untouchable: Store = new Proxy({} as Store, {
    get: (_, name) =>
      name === 'then'
        ? undefined
        : () => {
            throw new Error(`store touched: ${String(name)}`);
          },
  });
  const limiter = new Limiter(untouchable, {
    name: 'g',
    algorithm: 'fixed-window',
    limit: 5,
    window: '1m',
  });
  it.each([[0], [-1], [1.5], [Number.NaN], ['3'], [undefined]])('units %p', async (units) => {
    await expect(limiter.grant('k', units as number)).rejects.toThrow(
      /grant\(\): units must be a whole number of at least 1/,
    );
  });
  it('units too large for the window', async () => {
    await expect(limiter.grant('k', 2 ** 52)).rejects.toThrow(/grant\(\): units \d+ is too large/);
  });
  it('bad keys, and an argument grant does not take', async () => {
    await expect(limiter.grant('', 1)).rejects.toThrow(TypeError);
    await expect(
      (limiter.grant as (k: string, u: number, o: object) => Promise<void>)('k', 1, { units: 2 }),
    ).rejects.toThrow('grant() takes two arguments (the keys, and the units); got 3');
  });
  it('a store without grant', async () => {
    const store = new MemoryStore();
    const bare: Store = {
      consume: (r) => store.consume(r),
      peek: (r) => store.peek(r),
      refund: (r) => store.refund(r),
      reset: (r) => store.reset(r),
    };
    await expect(
      new Limiter(bare, { name: 'g', algorithm: 'fixed-window', limit: 5, window: '1m' }).grant(
        'k',
        1,
      ),
    ).rejects.toThrow('grant(): this store cannot grant room');
  });
});

describe('grant: sliding window takes the current count first, then enough of the previous', () => {
  it.each(stores.map((s) => [s.name, s] as const))('%s', async (_, backend) => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'sw',
      algorithm: 'sliding-window',
      limit: 10,
      window: 10_000,
    });
    clock.advance(1_000);
    await limiter.consume('k', { cost: 10 }); // window 0
    clock.advance(10_000); // 1 s into window 1: the previous 10 weigh 9
    await limiter.consume('k'); // 9 + 1: full
    expect(await left(limiter, 'k')).toBe(0);
    // 4 units: 1 off the current count, then 3 of room from the previous (4 of its units at 0.9).
    await limiter.grant('k', 4);
    expect(await left(limiter, 'k')).toBe(4);
  });
});

describe('grant: a RedisStore forgets the refusals it remembers for the keys', () => {
  const redis = stores.find((s) => s.name === 'redis');
  (redis ? it : it.skip)('the next consume after a grant is decided by Redis', async () => {
    const clock = new TestClock();
    clock.advance(1_000);
    const store = new RedisStore({
      client: redis!.client!,
      prefix: `grant-cache-${Date.now()}:`,
      clock: clock.read,
      refusalCache: true,
    });
    const limiter = new Limiter(store, {
      name: 'c',
      algorithm: 'fixed-window',
      limit: 2,
      window: '1m',
    });
    await limiter.consume('k', { cost: 2 });
    expect((await limiter.consume('k')).allowed).toBe(false);
    expect((await limiter.consume('k')).allowed).toBe(false); // remembered
    await limiter.grant('k', 1);
    expect((await limiter.consume('k')).allowed).toBe(true);
  });
});

jest.setTimeout(180_000);
describe('grant: RedisStore and MemoryStore agree through consume / refund / adjust / grant / advance', () => {
  type Op = { kind: 'consume' | 'adjust' | 'refund' | 'grant' | 'advance'; a: number; b: number };
  const op = fc.record({
    kind: fc.constantFrom('consume', 'consume', 'adjust', 'refund', 'grant', 'grant', 'advance'),
    a: fc.nat(30),
    b: fc.nat(25),
  }) as fc.Arbitrary<Op>;
  it.each(ALGORITHMS)('%s', async (algorithm) => {
    const redis = stores.find((s) => s.name === 'redis')!;
    const memory = stores.find((s) => s.name === 'memory')!;
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        run++;
        const clocks = [new TestClock(), new TestClock()];
        const lims = [redis, memory].map(
          (b, i) =>
            new Limiter(b.store(clocks[i]), {
              name: `g${run}`,
              algorithm,
              limit: 10,
              window: 7000,
            }),
        );
        const spends: Decision[][] = [[], []];
        const trace: string[] = [];
        for (const o of ops) {
          for (let i = 0; i < 2; i++) {
            const l = lims[i]!;
            if (o.kind === 'advance') clocks[i]!.advance(o.a * o.a * 20);
            else if (o.kind === 'consume') {
              const d = await l.consume('k', { cost: 1 + (o.a % 6) });
              if (d.allowed) spends[i]!.push(d);
            } else if (o.kind === 'grant') await l.grant('k', 1 + (o.b % 12));
            else if (spends[i]!.length) {
              const d = spends[i]![o.a % spends[i]!.length]!;
              if (o.kind === 'adjust') await l.adjust({ ...d.receipt }, o.b % 14);
              else await l.refund({ ...d.receipt });
            }
          }
          const [p0, p1] = await Promise.all(lims.map((l) => l.peek('k')));
          const f = (p: Decision) =>
            `${p.allowed} ${p.remaining} ${p.retryAfterMs} ${p.resetAfterMs}`;
          trace.push(`${o.kind} ${o.a} ${o.b}: ${f(p0!)} | ${f(p1!)}`);
          if (f(p0!) !== f(p1!)) throw new Error(trace.join('\n'));
          // Never beyond an empty state.
          if (p0!.remaining + 1 > 10)
            throw new Error(`more room than the limit\n${trace.join('\n')}`);
        }
      }),
      { numRuns: 120 },
    );
  });
});

describe('grant: a sliding log loses its newest entries, so the oldest still leave first', () => {
  it.each(stores.map((s) => [s.name, s] as const))('%s', async (_, backend) => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'sl',
      algorithm: 'sliding-log',
      limit: 10,
      window: 60_000,
    });
    clock.advance(1_000);
    await limiter.consume('k', { cost: 5 });
    clock.advance(10_000);
    await limiter.consume('k', { cost: 5 });
    await limiter.grant('k', 5);
    await limiter.consume('k', { cost: 5 });
    const refused = await limiter.consume('k');
    expect(refused.allowed).toBe(false);
    // The entries of t = 1 s are the oldest left: they leave at 61 s, 50 s from now.
    expect(refused.retryAfterMs).toBe(50_000);
  });
});

describe.each(stores)(
  '$name store: a grant under concurrent load gives exactly its units',
  (backend) => {
    it.each(ALGORITHMS)('%s', async (algorithm) => {
      const clock = new TestClock();
      clock.advance(1_000);
      const limiter = new Limiter(backend.store(clock), {
        name: 'race',
        algorithm,
        limit: 20,
        window: '1h',
      });
      await limiter.consume('k', { cost: 20 });
      const racing = Array.from({ length: 40 }, () => limiter.consume('k'));
      const granted = limiter.grant('k', 7);
      const more = Array.from({ length: 40 }, () => limiter.consume('k'));
      const decisions = await Promise.all([...racing, ...more]);
      await granted;
      const admitted = decisions.filter((d) => d.allowed).length;
      expect(admitted).toBe(7);
      expect(await left(limiter, 'k')).toBe(0);
    });
  },
);
