import fc from 'fast-check';
import Redis from 'ioredis';
import { type Decision, Limiter, MemoryStore, RedisStore, type RedisStoreClient } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { storageKey } from '../../lib/stores/storage-key.util';
import { TestClock } from '../support/backends';
import { connectNodeRedis } from '../support/node-redis';
import { startRedisServer, type StartedRedisServer } from '../support/redis';

const RUNS = Number(process.env.REDLIMIT_PROPERTY_RUNS ?? 40);

/** EVALSHA/EVAL calls the server ran since the last CONFIG RESETSTAT. */
async function scriptCalls(client: Redis): Promise<number> {
  const info = await client.info('commandstats');
  let calls = 0;
  for (const m of info.matchAll(/^cmdstat_(evalsha|eval|fcall):calls=(\d+)/gm))
    calls += Number(m[2]);
  return calls;
}

/** The clients coalescing is tested on: connects one to a URL, with how to close it. */
const CLIENTS: Array<
  [string, (url: string) => Promise<{ client: RedisStoreClient; close(): Promise<void> }>]
> = [
  [
    'ioredis',
    (url) => {
      const client = new Redis(url);
      return Promise.resolve({ client, close: () => Promise.resolve(client.disconnect()) });
    },
  ],
  [
    'node-redis',
    async (url) => {
      const client = await connectNodeRedis(url);
      return { client, close: () => Promise.resolve(client.destroy()) };
    },
  ],
];

describe.each(CLIENTS)(
  'coalescing on %s: decisions that arrive together go to Redis as one script run',
  (_name, connect) => {
    let server: StartedRedisServer;
    let client: RedisStoreClient;
    let close: () => Promise<void>;
    let admin: Redis;
    beforeAll(async () => {
      server = await startRedisServer();
      ({ client, close } = await connect(server.url));
      admin = new Redis(server.url);
    });
    afterAll(async () => {
      await close();
      admin.disconnect();
      await server.stop();
    });

    it.each([
      [true, 4], // the first alone, then the other 39 in batches of at most 16
      [false, 40],
    ])(
      'coalesce %s: 40 concurrent decisions take %i script runs, and admit exactly the limit',
      async (coalesce, runs) => {
        const store = new RedisStore({ client, prefix: `coalesce-${String(coalesce)}:`, coalesce });
        const limiter = new Limiter(store, {
          name: 'p',
          algorithm: 'sliding-window',
          limit: 25,
          window: '1h',
        });
        await limiter.peek('warm'); // loads the script and measures the Redis clock
        await admin.config('RESETSTAT');
        const decisions = await Promise.all(
          Array.from({ length: 40 }, (_, i) => limiter.consume(i % 2 ? 'a' : ['a', 'b'])),
        );
        expect(await scriptCalls(admin)).toBe(runs);
        expect(decisions.filter((d) => d.allowed)).toHaveLength(25);
        expect(decisions.filter((d) => d.failure)).toEqual([]);
        // In arrival order: the first 25 calls were admitted, the rest refused.
        expect(decisions.map((d) => d.allowed)).toEqual(
          Array.from({ length: 40 }, (_, i) => i < 25),
        );
      },
    );

    const fixed = (store: RedisStore, limit = 1, window = '1h') =>
      new Limiter(store, { name: 'p', algorithm: 'fixed-window', limit, window });
    /** Keeps the event loop busy, so replies wait in the socket until the next poll phase. */
    const busy = (ms: number) => {
      const until = performance.now() + ms;
      while (performance.now() < until);
    };

    it('a decision made after a reply arrives never overtakes one still queued', async () => {
      const limiter = fixed(new RedisStore({ client, prefix: `order-${Date.now()}:` }));
      await limiter.peek('warm');
      // From a check phase: the queue's flush (also a check-phase callback) then runs only after
      // the next poll phase has read A's reply.
      await new Promise((resolve) => setImmediate(resolve));
      const a = limiter.consume('x'); // nothing in flight: sent at once
      const b = limiter.consume('k'); // queued behind it
      let c: Promise<Decision> | undefined;
      void a.then(() => (c = limiter.consume('k'))); // A's reply is read before the queue leaves
      busy(30);
      await a;
      expect((await b).allowed).toBe(true);
      expect((await c!).allowed).toBe(false);
    });

    it('a stack never overtakes decisions queued before it', async () => {
      const limiter = fixed(new RedisStore({ client, prefix: `order-stack-${Date.now()}:` }));
      await limiter.peek('warm');
      void limiter.consume('x');
      const single = limiter.consume('k'); // queued
      const stacked = Limiter.consumeAll([{ limiter, keys: 'k' }]);
      expect((await single).allowed).toBe(true);
      expect((await stacked).allowed).toBe(false);
    });

    it('with a custom clock, each queued decision is judged at its own instant', async () => {
      const clock = new TestClock();
      const store = new RedisStore({ client, prefix: `clock-${Date.now()}:`, clock: clock.read });
      const limiter = fixed(store, 1, '1s');
      await limiter.peek('warm');
      const a = limiter.consume('k'); // alone
      const b = limiter.consume('k'); // queued, same instant: refused on budget
      clock.advance(1_000);
      const c = limiter.consume('k'); // queued, the next window: allowed
      const [da, db, dc] = await Promise.all([a, b, c]);
      expect([da.allowed, db.allowed, dc.allowed]).toEqual([true, false, true]);
      expect(db.failure).toBeUndefined();
      expect(db.retryAfterMs).toBeGreaterThan(0);
    });

    it("one decision's script error fails that decision only; the others in the batch stand", async () => {
      const prefix = `werr-${Date.now()}:`;
      const store = new RedisStore({ client, prefix });
      const limiter = new Limiter(
        store,
        { name: 'p', algorithm: 'sliding-log', limit: 10, window: '1h' },
        { onStoreFailure: () => undefined },
      );
      await limiter.peek('warm');
      await admin.set(storageKey(prefix, 'bad', 'p', 0), 'not a sorted set');
      const decisions = await Promise.all([
        limiter.consume('a'), // alone
        limiter.consume('a'),
        limiter.consume('bad'),
        limiter.consume('a'),
      ]);
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, false, true]);
      expect(decisions[2].failure?.error.message).toMatch(/WRONGTYPE/);
      expect(await admin.zcard(storageKey(prefix, 'a', 'p', 0))).toBe(3);
    });

    it('a batch answers exactly as the same calls made one by one, in order, for every algorithm', async () => {
      const call = fc.record({
        keys: fc.subarray(['a', 'b', 'c'], { minLength: 1, maxLength: 2 }),
        cost: fc.integer({ min: 1, max: 2 }),
        peek: fc.boolean(),
      });
      const step = fc.oneof(
        {
          weight: 3,
          arbitrary: fc.record({ burst: fc.array(call, { minLength: 1, maxLength: 12 }) }),
        },
        { weight: 1, arbitrary: fc.record({ advance: fc.integer({ min: 1, max: 1_500 }) }) },
        { weight: 1, arbitrary: fc.record({ refund: fc.nat() }) },
      );
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...ALGORITHMS),
          fc.array(step, { maxLength: 12 }),
          async (algorithm, steps) => {
            const clock = new TestClock();
            const policy = {
              name: 'p',
              algorithm,
              limits: [
                { limit: 4, window: 1_000 },
                { limit: 7, window: 3_000 },
              ],
            };
            const store = new RedisStore({
              client,
              prefix: `coalesce-model-${run++}:`,
              clock: clock.read,
            });
            const real = new Limiter(store, policy);
            const model = new Limiter(new MemoryStore({ clock: clock.read }), policy);
            await real.peek('warm');
            const spent: Array<[Decision, Decision]> = [];
            for (const s of steps) {
              if ('advance' in s) {
                clock.advance(s.advance);
              } else if ('refund' in s) {
                const pair = spent[s.refund % Math.max(1, spent.length)];
                if (pair) {
                  await real.refund(pair[0]);
                  await model.refund(pair[1]);
                }
              } else {
                const go = (l: Limiter, c: (typeof s.burst)[number]) =>
                  c.peek ? l.peek(c.keys, { cost: c.cost }) : l.consume(c.keys, { cost: c.cost });
                const got = await Promise.all(s.burst.map((c) => go(real, c)));
                const expected: Decision[] = [];
                for (const c of s.burst) expected.push(await go(model, c));
                const view = (d: Decision) => [
                  d.allowed,
                  d.remaining,
                  d.retryAfterMs,
                  d.resetAfterMs,
                ];
                expect(got.map(view)).toEqual(expected.map(view));
                got.forEach((d, i) => {
                  if (d.receipt.spent) spent.push([d, expected[i]!]);
                });
              }
            }
          },
        ),
        { numRuns: RUNS },
      );
    });
  },
);
