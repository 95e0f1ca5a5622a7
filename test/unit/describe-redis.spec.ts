import { describeRedis } from '../../lib/config/describe-redis.util';
import type { RedisStoreClient } from '../../lib/stores/clients/redis-client.shape';

/** The client is not read for options that say where Redis is. */
const client = {} as RedisStoreClient;

describe('describeRedis (the startup log line "Rate limits are kept in Redis at …")', () => {
  it('masks the password of every Cluster node given as a URL', () => {
    const described = describeRedis(
      {
        nodes: [
          'redis://:s3cret-pass@cache-0:6379',
          'rediss://admin:other%40secret@cache-1:6380',
          'redis://u:pa/ss@cache-2:6379',
          { host: 'cache-3', port: 6381 },
        ],
      },
      client,
    );
    expect(described).toBe(
      'Cluster redis://:***@cache-0:6379, rediss://admin:***@cache-1:6380, redis://u:***@cache-2:6379, cache-3:6381',
    );
    expect(described).not.toMatch(/s3cret|other|pa\/ss/);
  });

  it('masks the password of a URL, alone or as an option', () => {
    expect(describeRedis('redis://:pw-secret@cache:6379/0', client)).toBe(
      'redis://:***@cache:6379/0',
    );
    expect(describeRedis({ url: 'redis://u:pw-secret@cache:6379' }, client)).toBe(
      'redis://u:***@cache:6379',
    );
    expect(describeRedis({ host: 'cache', port: 6380, password: 'pw-secret' }, client)).toBe(
      'cache:6380',
    );
  });
});
