import fc from 'fast-check';
import Redis from 'ioredis';
import { ALGORITHMS, type Decision, Limiter, MemoryStore, RedisStore } from '../../lib';
import { TestClock } from '../support/backends';
import { startRedisServer, type StartedRedisServer } from '../support/redis';

const RUNS = Number(process.env.REDLIMIT_PROPERTY_RUNS ?? 40);

/** EVALSHA/EVAL calls the server ran since the last CONFIG RESETSTAT. */
async function scriptCalls(client: Redis): Promise<number> {
  const info = await client.info('commandstats');
  let calls = 0;
  for (const m of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) calls += Number(m[2]);
  return calls;
}

describe('coalescing: decisions that arrive together go to Redis as one script run', () => {
  let server: StartedRedisServer;
  let client: Redis;
  let admin: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    client = new Redis(server.url);
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    client.disconnect();
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
      expect(decisions.map((d) => d.allowed)).toEqual(Array.from({ length: 40 }, (_, i) => i < 25));
    },
  );

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
});
