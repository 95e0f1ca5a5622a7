/**
 * Store calls bounded by the request's own deadline on a real Redis: writes held (CLIENT PAUSE
 * WRITE) past every caller's deadline, then let go. Each caller was told its spend failed, so none
 * of those spends may count once Redis runs them; the calls issued after take effect in order,
 * as on a MemoryStore that never saw the failed ones.
 */
import Redis from 'ioredis';
import { Limiter, MemoryStore, RedisStore } from '../../lib';
import { redisUrl, uniquePrefix } from '../support/redis';

describe('writes held past the deadline, then released', () => {
  const clients: Redis[] = [];
  afterAll(() => clients.forEach((c) => c.disconnect()));
  const policy = { name: 'p', algorithm: 'fixed-window' as const, limit: 3, window: '1h' };

  it.each([true, false])(
    'coalesce %s: no phantom spends, later calls as on MemoryStore',
    async (coalesce) => {
      const client = new Redis(redisUrl());
      const admin = new Redis(redisUrl());
      clients.push(client, admin);
      const store = new RedisStore({ client, prefix: uniquePrefix('paused'), coalesce });
      const limiter = new Limiter(store, policy, { timeoutMs: 15, failMode: 'closed' });
      // The Redis clock measured and the library loaded, without a deadline this short.
      expect((await new Limiter(store, policy).consume('warm')).allowed).toBe(true);
      await admin.call('client', 'pause', '60000', 'write');
      let decisions;
      try {
        decisions = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('k')));
      } finally {
        await admin.call('client', 'unpause');
      }
      expect(decisions.map((d) => d.failure?.reason)).toEqual(Array(5).fill('timeout'));
      await client.ping(); // the held calls answered (in order on this connection)
      const memory = new Limiter(new MemoryStore(), policy);
      const after = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('k')));
      const expected = await Promise.all(Array.from({ length: 5 }, () => memory.consume('k')));
      expect(after.map((d) => [d.allowed, d.remaining])).toEqual(
        expected.map((d) => [d.allowed, d.remaining]),
      );
    },
  );
});
