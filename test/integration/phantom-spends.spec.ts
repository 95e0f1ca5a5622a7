import Redis from 'ioredis';
import { type Algorithm, RedisStore, type SpendRequest, StoreTimeoutError } from '../../lib';
import { ALGORITHMS, resolvePolicy } from '../../lib/core/policy';
import { monotonicNow } from '../../lib/core/clock.util';
import { storageKeysWithLedgers } from '../../lib/stores/storage-key.util';
import { scriptLibrary } from '../../lib/stores/scripts';
import { type FreezableRedis, startFreezableRedis } from '../support/freezable-redis';
import { startRedisServer } from '../support/redis';
import { spawnRedisServer } from '../support/redis-server';
import { outcomeEntries } from '../support/outcome-entries';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A spend of 1 on 'k' at 5 per hour whose caller waits 100 ms from now. */
function spendRequest(algorithm: Algorithm): SpendRequest {
  const { limits } = resolvePolicy({ name: 'p', algorithm, limit: 5, window: '1h' });
  return { policy: 'p', algorithm, limits, keys: ['k'], cost: 1, deadlineAt: monotonicNow() + 100 };
}

describe('a spend that reaches Redis after its deadline writes nothing', () => {
  let redis: FreezableRedis;
  let client: Redis;
  beforeAll(async () => {
    redis = await startFreezableRedis();
    client = redis.client;
  });
  afterAll(() => redis.stop());

  it.each(ALGORITHMS)('%s: a command held up by a frozen Redis', async (algorithm) => {
    const store = new RedisStore({ client, prefix: `phantom:${algorithm}:` });
    const request = spendRequest(algorithm);
    await store.peek(request); // scripts loaded, clock measured
    const late = await redis.whileHung(async () => {
      const pending = store.consume(request).catch((error: unknown) => error);
      await sleep(300); // the caller gave up after 100 ms
      return { pending };
    });
    const outcome = await late.pending;
    expect(outcome).toBeInstanceOf(StoreTimeoutError);
    expect((outcome as Error).message).toMatch(/after its deadline and wrote nothing/);
    expect(await client.keys('phantom:*')).toEqual([]);
  });

  it.each(ALGORITHMS)(
    '%s: the first spend of a fresh store, while Redis is frozen',
    async (algorithm) => {
      const store = new RedisStore({ client, prefix: `fresh:${algorithm}:` }); // clock not measured yet
      const late = await redis.whileHung(async () => {
        const pending = store.consume(spendRequest(algorithm)).catch((error: unknown) => error);
        await sleep(300);
        return { pending };
      });
      const outcome = await late.pending;
      expect(outcome).toBeInstanceOf(StoreTimeoutError);
      expect(await client.keys('fresh:*')).toEqual([]);
    },
  );

  it('decisions coalesced into one batch: those past their deadline write nothing, the others stand', async () => {
    const store = new RedisStore({ client, prefix: 'batched:' });
    const request = spendRequest('fixed-window');
    await store.peek(request); // scripts loaded, clock measured
    const late = await redis.whileHung(async () => {
      const patient = { ...request, keys: ['patient'], deadlineAt: monotonicNow() + 60_000 };
      // The first goes alone; the three behind it leave together as one batch/consume run.
      const pending = [
        store.consume({ ...request, keys: ['first'] }),
        store.consume({ ...request, keys: ['short-1'] }),
        store.consume(patient),
        store.consume({ ...request, keys: ['short-2'] }),
      ].map((p) => p.catch((error: unknown) => error));
      await sleep(300); // long past the 100 ms deadlines, well before the patient one
      return { pending };
    });
    const [first, short1, patient, short2] = await Promise.all(late.pending);
    for (const outcome of [first, short1, short2])
      expect(outcome).toBeInstanceOf(StoreTimeoutError);
    expect(patient).toMatchObject({ allowed: true });
    // The patient spend's state and the process's outcome hash, with the run's field (named
    // after its first spend, short-1) holding the patient's entry alone (place 2), nothing else.
    const stored = (await client.keys('batched:*')).sort();
    expect(stored.filter((k) => !k.includes('}!'))).toEqual(['batched:{patient}:p:0']);
    expect(await outcomeEntries(client, 'batched:')).toEqual([
      expect.stringMatching(/^[\w-]+\*#2$/) as unknown as string,
    ]);
    expect(stored).toHaveLength(2);
  });

  it('a command replayed from the offline queue after Redis restarted', async () => {
    const own = await startRedisServer();
    const port = own.port;
    const queued = new Redis(own.url, { maxRetriesPerRequest: null, retryStrategy: () => 50 });
    const store = new RedisStore({ client: queued, prefix: 'replay:' });
    const request = spendRequest('fixed-window');
    let restarted: { url: string; stop(): Promise<void> } | undefined;
    try {
      await store.peek(request); // clock measured
      await own.stop(); // Redis is gone; ioredis queues commands until it reconnects
      const replayed = store.consume(request).catch((error: unknown) => error);
      await sleep(300); // long past the caller's 100 ms
      restarted = await spawnRedisServer([], { pickPort: () => Promise.resolve(port) });
      const outcome = await replayed; // sent once the client reconnects
      expect(outcome).toBeInstanceOf(StoreTimeoutError);
      expect((outcome as Error).message).toMatch(/after its deadline and wrote nothing/);
      const check = new Redis(restarted.url);
      expect(await check.keys('replay:*')).toEqual([]);
      check.disconnect();
    } finally {
      queued.disconnect();
      await restarted?.stop();
    }
  });

  it('in a batch on the Redis clock, a decision a millisecond past its deadline writes nothing', async () => {
    // The batch script skips per-decision deadlines while the earliest has not passed: called
    // directly, with one deadline 1 ms before a TIME read ahead of the call (so it has passed by
    // at least 1 ms when the batch runs) and one far ahead.
    const store = new RedisStore({ client, prefix: 'edge:' });
    await store.peek(spendRequest('fixed-window')); // the library loaded
    const library = scriptLibrary();
    const [seconds, micros] = await client.time();
    const past = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - 1;
    const keys = [
      ...storageKeysWithLedgers('edge:', ['a'], 'p', 1),
      ...storageKeysWithLedgers('edge:', ['b'], 'p', 1),
    ];
    const spendOneKey = ((1 - 1) * 2 + 1) * 2 + 1; // rule set 1, one key, a spend
    const reply = (await client.call(
      'fcall',
      library.functionName('batch/consume'),
      keys.length,
      ...keys,
      '',
      0,
      past,
      `${past},${past + 60_000}`,
      '',
      2,
      1,
      'fixed-window',
      '1;5,3600000,5',
      2,
      spendOneKey,
      1, // (no spend id, no run field: no outcome marker)
      spendOneKey,
      1,
    )) as number[];
    expect(reply[1]).toBe(-1); // past its deadline: -1 alone
    expect(reply[2]).toBe(1 + 8 * 1); // allowed, binding limit 1 (see writeDecision)
    expect(await client.exists(storageKeysWithLedgers('edge:', ['a'], 'p', 1)[0]!)).toBe(0);
    expect(await client.get(storageKeysWithLedgers('edge:', ['b'], 'p', 1)[0]!)).toBe('1');
  });
});
