/**
 * node-redis (`redis` on npm) as RedisStore's client, beyond the shared suites that run on it
 * through backends(…, { nodeRedis: true }): what depends on the client itself — scripts and their
 * recovery, deadlines on a frozen server, the clock probe, coalescing, the Cluster's masters.
 */
import { Limiter, RedisStore } from '../../lib';
import { connectNodeRedis } from '../support/node-redis';
import { redisUrl, uniquePrefix } from '../support/redis';

describe('node-redis client', () => {
  it('decides and refunds on a createClient() client', async () => {
    const client = await connectNodeRedis(redisUrl());
    try {
      const limiter = new Limiter(new RedisStore({ client, prefix: uniquePrefix('node-redis') }), {
        name: 'p',
        algorithm: 'fixed-window',
        limit: 2,
        window: '1m',
      });
      const first = await limiter.consume('k');
      expect(first.allowed).toBe(true);
      expect(await limiter.refund(first)).toBe(true);
      expect((await limiter.consume('k')).remaining).toBe(1);
    } finally {
      await client.close();
    }
  });
});
