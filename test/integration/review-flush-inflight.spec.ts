/**
 * FUNCTION FLUSH while decisions are in flight through the ioredis port's direct FCALL: every call
 * is decided (the runner's recovery waits for every earlier send, counted), and exactly the limit
 * is allowed, as on a MemoryStore. On a redis-server of its own: FUNCTION FLUSH on the run's shared
 * server would also meet the other suites' calls (live limits' polls, boards' flushes), which
 * load the library again in between, and this spec counts the loads its own calls cause.
 */
import Redis from 'ioredis';
import { Limiter, MemoryStore, RedisStore } from '../../lib';
import { uniquePrefix } from '../support/redis';
import { type SpawnedRedisServer, spawnRedisServer } from '../support/redis-server';

describe('FUNCTION FLUSH with calls in flight', () => {
  const clients: Redis[] = [];
  let server: SpawnedRedisServer;
  const redisUrl = () => server.url;
  beforeAll(async () => {
    server = await spawnRedisServer();
  });
  afterAll(async () => {
    clients.forEach((c) => c.disconnect());
    await server.stop();
  });
  const policy = { name: 'p', algorithm: 'fixed-window' as const, limit: 5, window: '1h' };

  it.each([true, false])(
    'coalesce %s: 60 calls at a limit of 5, flushed twice midway',
    async (coalesce) => {
      const client = new Redis(redisUrl());
      const admin = new Redis(redisUrl());
      clients.push(client, admin);
      const loads = async () =>
        Number(
          /cmdstat_function\|load:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0,
        );
      // Whether a flush lands while calls are in flight (on another connection) is up to the
      // machine: the run is repeated, each time checked in full, until one did (at most 8).
      let hit = false;
      for (let run = 0; run < 8 && !hit; run++) {
        const limiter = new Limiter(
          new RedisStore({ client, prefix: uniquePrefix('flush'), coalesce }),
          policy,
          { timeoutMs: 5000, failMode: 'closed' },
        );
        await limiter.peek('warm');
        const loadsBefore = await loads();
        const calls: Array<Promise<{ allowed: boolean; failure?: unknown }>> = [];
        for (let round = 0; round < 3; round++) {
          for (let i = 0; i < 20; i++) calls.push(limiter.consume('k'));
          if (round < 2) void admin.call('function', 'flush', 'sync');
          await Promise.resolve();
        }
        const decisions = await Promise.all(calls);
        expect(decisions.filter((d) => d.failure !== undefined)).toEqual([]);
        const memory = new Limiter(new MemoryStore(), policy);
        const expected = await Promise.all(calls.map(() => memory.consume('k')));
        expect(decisions.map((d) => d.allowed)).toEqual(expected.map((d) => d.allowed));
        hit = (await loads()) > loadsBefore; // the flush did hit calls in flight
      }
      expect(hit).toBe(true);
    },
  );
});
