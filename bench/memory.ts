// Bytes per caller key, measured with MEMORY USAGE on a real Redis, with the default prefix 'rl:'
// (keys it creates are deleted afterwards; point it at a scratch database). Without REDIS_URL it
// starts a private redis-server. `npm run bench` reports keys and bytes per caller for every
// contender too; this one shows the stored key names.
//   npx ts-node --transpile-only bench/memory.ts [--callers 1000] [--redis URL]
import Redis from 'ioredis';
import { Limiter, RedisStore } from '../lib';
import { ALGORITHMS } from '../lib/core/policy';
import { storageKeys } from '../lib/stores/storage-key.util';
import { parseCommandLine, positiveInteger } from './support/cli.util';
import { benchRedis } from './support/redis.util';

const USAGE = `npx ts-node --transpile-only bench/memory.ts [options]
  --callers N  callers per algorithm (default 1000)
  --redis URL  Redis to use (default: REDIS_URL, else a private redis-server); keys under 'rl:'
               are written and deleted, so point it at a scratch database`;

async function main(): Promise<void> {
  const values = parseCommandLine(USAGE, {
    callers: { type: 'string', default: '1000' },
    redis: { type: 'string', default: '' },
  });
  const redis = await benchRedis(values.redis);
  const client = new Redis(redis.url);
  const prefix = 'rl:';
  const callers = positiveInteger(values.callers, 'callers', USAGE);
  const spends = 5;
  const version = ((await client.info('server')).match(/redis_version:(\S+)/) ?? [])[1];
  console.log(
    `Redis ${version}; ${callers} callers × ${spends} spends (limit 10 per 15 min), policy 'login'\n`,
  );
  console.log(
    '| algorithm | stored keys per caller | key name | bytes per stored key (MEMORY USAGE) |',
  );
  console.log('|---|---|---|---|');
  try {
    for (const algorithm of ALGORITHMS) {
      const limiter = new Limiter(new RedisStore({ client, prefix }), {
        name: 'login',
        algorithm,
        limit: 10,
        window: '15m',
      });
      const keys = Array.from({ length: callers }, (_, i) => `ip:203.0.${i >> 8}.${i & 255}`);
      // Steady state: 5 spends per caller (a sliding log holds one member per unit).
      for (let round = 0; round < spends; round++)
        for (const key of keys) await limiter.consume(key);
      const stored = storageKeys(prefix, keys, 'login', 1);
      let bytes = 0;
      for (const key of stored) bytes += (await client.memory('USAGE', key)) ?? 0;
      console.log(
        `| ${algorithm} | 1 | \`${stored[300]}\` (${stored[300]!.length} B) | ${(bytes / stored.length).toFixed(1)} |`,
      );
      await client.del(...stored);
    }
  } finally {
    client.disconnect();
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
