/**
 * The ioredis port sends FCALL through the client's own `Redis.Command` (not `call()`, whose
 * argument flattening is costly), except where `call()` does something of its own: a client
 * `keyPrefix` (prepended to the script's KEYS), `enableAutoPipelining` (commands of one tick in
 * one write) and `showFriendlyErrorStack` (a stack from the caller). Each client decides, and
 * its keys are where `call()` would have put them.
 */
import Redis, { type RedisOptions } from 'ioredis';
import { Limiter, RedisStore } from '../../lib';
import { redisUrl, uniquePrefix } from '../support/redis';

describe('ioredis port: FCALL with and without call()', () => {
  const clients: Redis[] = [];
  const client = async (options: RedisOptions = {}) => {
    const redis = new Redis(redisUrl(), options);
    clients.push(redis);
    await redis.ping();
    return redis;
  };
  afterAll(() => Promise.all(clients.map((c) => c.quit())));

  const fixed = { name: 'p', algorithm: 'fixed-window' as const, limit: 3, window: '1m' };

  it.each([
    ['a plain client', {}],
    ['a client with enableAutoPipelining', { enableAutoPipelining: true }],
    ['a client with showFriendlyErrorStack', { showFriendlyErrorStack: true }],
  ])('%s: decisions, coalesced and one at a time, and a refund', async (_, options) => {
    const redis = await client(options);
    const prefix = uniquePrefix('port');
    for (const coalesce of [true, false]) {
      const limiter = new Limiter(
        new RedisStore({ client: redis, prefix: `${prefix}${coalesce}:`, coalesce }),
        fixed,
      );
      const decisions = await Promise.all(
        Array.from({ length: 5 }, () => limiter.consume('caller')),
      );
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
      expect(await limiter.refund(decisions[0]!)).toBe(true);
      expect((await limiter.consume('caller')).allowed).toBe(true);
    }
  });

  it("a client's keyPrefix is prepended to the stored keys, as call() does", async () => {
    const prefix = uniquePrefix('port');
    const prefixed = await client({ keyPrefix: 'client-prefix:' });
    const plain = await client();
    for (const coalesce of [true, false]) {
      const store = new RedisStore({ client: prefixed, prefix: `${prefix}${coalesce}:`, coalesce });
      const limiter = new Limiter(store, fixed);
      await Promise.all(Array.from({ length: 3 }, () => limiter.consume('caller')));
      expect(await plain.get(`client-prefix:${prefix}${coalesce}:{caller}:p:0`)).toBe('3');
      expect(await plain.exists(`${prefix}${coalesce}:{caller}:p:0`)).toBe(0);
    }
  });
});
