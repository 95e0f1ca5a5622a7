// The race table: N attempts sent at once against a fresh key with a limit of 5. How many got
// through? A limiter that reads the counter from Node and writes afterwards (GET, decide, INCR)
// lets nearly all of them through; one that checks and spends inside Redis lets exactly 5.
//
//   npm run bench:race -- [--trials 20] [--limit 5] [--pool 8] [--redis URL] [--no-write]
//
// Two setups, each with a warmed connection (scripts loaded, one round trip done): one ioredis
// client (commands pipelined on one connection), and a pool of `pool` clients the attempts are
// dealt to in turn (as several app instances would send them). Each cell is `trials` runs, each on
// a fresh key; reported: the typical (median) and the largest number admitted.
import Redis from 'ioredis';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { Limiter, RedisStore } from '../lib';
import { ALGORITHMS } from '../lib/core/policy';
import { parseCommandLine, positiveInteger } from './support/cli.util';
import { ProgressBar } from './support/progress.util';
import { benchRedis, deleteKeys, redisVersion } from './support/redis.util';
import {
  describeMachine,
  machine,
  markdownTable,
  RESULTS_DIR,
  writeResult,
} from './support/report.util';
import { median } from './support/stats.util';

const USAGE = `npm run bench:race -- [options]
  --trials N   runs per cell, each on a fresh key (default 20)
  --limit N    the limit (default 5)
  --pool N     clients in the pooled setup (default 8)
  --redis URL  Redis to use (default: REDIS_URL, else a private redis-server)
  --out DIR    where race.md goes (default bench/results)
  --no-write   print the table only`;

const BURSTS = [50, 200];
const WINDOW_MS = 60_000;

/** One attempt for `key` on client number `c`; resolves whether it was admitted. */
type Attempt = (key: string, c: number) => Promise<boolean>;

interface Racer {
  readonly name: string;
  readonly attempt: Attempt;
}

function racers(clients: readonly Redis[], prefix: string, limit: number): Racer[] {
  // The limiter everybody writes first: read in Node, decide, then write.
  const naive: Attempt = async (key, c) => {
    const client = clients[c]!;
    const count = Number(await client.get(key));
    if (count >= limit) return false;
    if ((await client.incr(key)) === 1) await client.pexpire(key, WINDOW_MS);
    return true;
  };
  const list: Racer[] = [{ name: 'naive GET, then INCR (decided in Node)', attempt: naive }];
  for (const algorithm of ALGORITHMS) {
    const limiters = clients.map(
      (client) =>
        new Limiter(new RedisStore({ client, prefix }), {
          name: algorithm,
          algorithm,
          limit,
          window: WINDOW_MS,
        }),
    );
    list.push({
      name: `redlimit ${algorithm}`,
      attempt: async (key, c) => (await limiters[c]!.consume(key)).allowed,
    });
  }
  const flexible = clients.map(
    (storeClient) =>
      new RateLimiterRedis({
        storeClient,
        keyPrefix: `${prefix}rlflx`,
        points: limit,
        duration: WINDOW_MS / 1000,
      }),
  );
  const storages = clients.map((client) => new ThrottlerStorageRedisService(client));
  list.push(
    {
      name: 'rate-limiter-flexible consume',
      attempt: (key, c) =>
        flexible[c]!.consume(key).then(
          () => true,
          (refusal: unknown) => {
            if (refusal instanceof Error) throw refusal;
            return false; // a RateLimiterRes: refused
          },
        ),
    },
    {
      // As @nestjs/throttler's ThrottlerGuard reads the answer: blocked → 429.
      name: '@nest-lab/throttler-storage-redis increment',
      attempt: async (key, c) =>
        !(await storages[c]!.increment(key, WINDOW_MS, limit, WINDOW_MS, 'default')).isBlocked,
    },
  );
  return list;
}

async function main(): Promise<void> {
  const values = parseCommandLine(USAGE, {
    trials: { type: 'string', default: '20' },
    limit: { type: 'string', default: '5' },
    pool: { type: 'string', default: '8' },
    redis: { type: 'string', default: '' },
    out: { type: 'string', default: RESULTS_DIR },
    'no-write': { type: 'boolean', default: false },
  });
  const options = {
    ...values,
    trials: positiveInteger(values.trials, 'trials', USAGE),
    limit: positiveInteger(values.limit, 'limit', USAGE),
    pool: positiveInteger(values.pool, 'pool', USAGE),
  };
  const redis = await benchRedis(options.redis);
  const pool = Array.from({ length: options.pool }, () => new Redis(redis.url));
  const prefix = `race:${process.pid}:${Date.now()}:`;
  try {
    const host = machine(await redisVersion(pool[0]!));
    const setups = [
      { name: 'one client', clients: 1 },
      { name: `pool of ${options.pool}`, clients: options.pool },
    ];
    const all = racers(pool, prefix, options.limit);
    const progress = new ProgressBar(setups.length * all.length * BURSTS.length);
    // Warm every connection: a round trip, and every script loaded on it.
    await Promise.all(pool.map((client) => client.ping()));
    for (const racer of all) {
      await Promise.all(pool.map((_, c) => racer.attempt(`${prefix}warm:${c}`, c)));
    }
    const rows: string[][] = [];
    let trial = 0;
    for (const racer of all) {
      const cells: string[] = [];
      for (const setup of setups) {
        for (const burst of BURSTS) {
          progress.tick(`${racer.name}: ${burst} at once, ${setup.name}`);
          const admitted: number[] = [];
          for (let t = 0; t < options.trials; t++) {
            const key = `${prefix}k${trial++}`;
            const results = await Promise.all(
              Array.from({ length: burst }, (_, i) => racer.attempt(key, i % setup.clients)),
            );
            admitted.push(results.filter(Boolean).length);
          }
          cells.push(`${median(admitted)} / ${Math.max(...admitted)}`);
        }
      }
      rows.push([racer.name, ...cells]);
    }
    progress.end();
    const header = [`limiter (limit ${options.limit})`];
    for (const setup of setups) {
      for (const burst of BURSTS) header.push(`${burst} at once, ${setup.name}`);
    }
    const markdown = [
      '# How many got through? (`npm run bench:race`)',
      '',
      `Measured ${new Date().toISOString().slice(0, 10)}: ${describeMachine(host)}.`,
      '',
      `Attempts sent at once (one \`Promise.all\`) against a fresh key, limit ${options.limit} per ` +
        `minute, warmed connections; each cell is typical (median) / largest admitted over ` +
        `${options.trials} trials. "One client": every attempt on one ioredis connection ` +
        `(pipelined); "pool of ${options.pool}": attempts dealt to ${options.pool} connections in ` +
        'turn, as several app instances would send them.',
      '',
      markdownTable(header, rows),
    ].join('\n');
    console.log(markdown);
    if (!options['no-write']) {
      process.stderr.write(`wrote ${writeResult(options.out, 'race.md', markdown)}\n`);
    }
  } finally {
    await deleteKeys(pool[0]!, `${prefix}*`).catch(() => 0);
    await deleteKeys(pool[0]!, `{${prefix}*`).catch(() => 0);
    for (const client of pool) client.disconnect();
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
