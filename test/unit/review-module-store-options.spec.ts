// Review of the module options outcomeMarkers, fleetBeatMs and fleetTtlMs (and their env vars):
// a bad value must fail with an error naming the option before Redis is touched.
import Redis from 'ioredis';
import * as factory from '../../lib/config/redis-client.factory';
import { redlimitOptionsFromEnv } from '../../lib/config/options-from-env.util';
import { RedlimitConnection } from '../../lib/nest/module/redlimit-connection.service';
import type { RedlimitModuleOptions } from '../../lib/config/redlimit-options.interface';

describe('review: the module store options are checked before Redis is touched', () => {
  afterEach(() => jest.restoreAllMocks());

  it.each<[string, Partial<RedlimitModuleOptions>, RegExp]>([
    ['fleetBeatMs: 5', { fleetBeatMs: 5 }, /fleetBeatMs/],
    ['fleetTtlMs: 1', { fleetTtlMs: 1 }, /fleetTtlMs/],
    ['outcomeMarkers: "no"', { outcomeMarkers: 'no' as unknown as boolean }, /outcomeMarkers/],
  ])('%s: rejected without creating (and leaking) a Redis client', async (_, bad, named) => {
    const clients: Redis[] = [];
    // The client the module would create and own: it is never closed when the store throws.
    const create = jest.spyOn(factory, 'createRedisClient').mockImplementation(() => {
      const client = new Redis({ lazyConnect: true });
      clients.push(client);
      return Promise.resolve({ client, owned: true });
    });
    try {
      await expect(
        RedlimitConnection.open({ redis: 'redis://127.0.0.1:1', ...bad }),
      ).rejects.toThrow(named);
      expect(create).not.toHaveBeenCalled();
    } finally {
      for (const client of clients) client.disconnect();
    }
  });

  it('REDLIMIT_FLEET_BEAT_MS / REDLIMIT_FLEET_TTL_MS out of their documented range name the variable', () => {
    // The table documents 100–60000 ms and "3 beats to one day"; the parser takes any whole ms ≥ 1,
    // so the store later fails with `RedisStore options.fleetBeatMs …`, naming no variable.
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_FLEET_BEAT_MS: '50' })).toThrow(
      /^REDLIMIT_FLEET_BEAT_MS="50" is invalid/,
    );
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_FLEET_TTL_MS: '100000000' })).toThrow(
      /^REDLIMIT_FLEET_TTL_MS="100000000" is invalid/,
    );
  });
});
