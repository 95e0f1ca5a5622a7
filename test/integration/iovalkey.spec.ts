/**
 * iovalkey (the ioredis fork for Valkey) as RedisStore's client: decisions, refunds, lockouts,
 * coalescing, the function library and its recovery. RedisStore types its client by shape, so an
 * iovalkey client needs no cast.
 */
import Valkey from 'iovalkey';
import { Limiter, RedisStore } from '../../lib';
import { TestClock } from '../support/backends';
import { redisUrl, startRedisServer, uniquePrefix } from '../support/redis';

describe('iovalkey client', () => {
  let valkey: Valkey;
  beforeAll(async () => {
    valkey = new Valkey(redisUrl());
    await Promise.all(Array.from({ length: 20 }, () => valkey.ping()));
  });
  afterAll(() => valkey.quit());

  const store = (clock?: TestClock) =>
    new RedisStore({
      client: valkey,
      prefix: uniquePrefix('iovalkey'),
      ...(clock && { clock: clock.read }),
    });

  it('decides, refunds exactly and locks out, on the Redis clock and a test clock', async () => {
    for (const clock of [undefined, new TestClock()]) {
      const limiter = new Limiter(store(clock), {
        name: 'login',
        algorithm: 'sliding-window',
        limit: 2,
        window: '1m',
        block: { duration: '5m' },
      });
      const first = await limiter.consume(['ip:1', 'email:a']);
      expect(first.allowed).toBe(true);
      expect(await limiter.refund(first)).toBe(true);
      expect((await limiter.consume('ip:1')).remaining).toBe(1);
      await limiter.consume('ip:1');
      const refused = await limiter.consume('ip:1');
      expect(refused.allowed).toBe(false);
      expect(refused.retryAfterMs).toBeGreaterThan(240_000); // the 5-min lockout
    }
  });

  it('50 concurrent decisions at limit 5 (coalesced): exactly 5 admitted', async () => {
    const limiter = new Limiter(store(), {
      name: 'race',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1m',
    });
    const decisions = await Promise.all(Array.from({ length: 50 }, () => limiter.consume('k')));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
  });

  it('reloads the function library after FUNCTION FLUSH (on a server of its own)', async () => {
    const server = await startRedisServer();
    const own = new Valkey(server.url);
    try {
      const limiter = new Limiter(new RedisStore({ client: own }), {
        name: 'flush',
        algorithm: 'gcra',
        limit: 3,
        window: '1s',
      });
      await limiter.consume('k');
      await own.call('FUNCTION', 'FLUSH');
      expect((await limiter.consume('k')).allowed).toBe(true);
      expect(((await own.call('FUNCTION', 'LIST')) as unknown[]).length).toBe(1);
    } finally {
      own.disconnect();
      await server.stop();
    }
  });
});
