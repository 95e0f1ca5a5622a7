// Side-by-side throughput of redlimit against the physical floor, on one Redis, in one run.
//
//   REDIS_URL=redis://127.0.0.1:6379/15 npm run bench -- [--attempts 20000] [--callers 2000]
//     [--concurrency 64] [--rounds 3]
//
// Every contender runs the same workload (attempts spread over callers, `concurrency` in flight,
// on one warmed ioredis client). Contenders are interleaved in rotated rounds, so drift on a shared
// machine spreads over all of them; the report gives the median round per contender, and ratios
// to the floor (a trivial EVALSHA INCR on the same client). Performance is measured here, never
// asserted in tests. Peers (rate-limiter-flexible, @nest-lab/throttler-storage-redis) come next.
import Redis from 'ioredis';
import { type Algorithm, ALGORITHMS, Limiter, RedisStore } from '../lib';

interface Options {
  attempts: number;
  callers: number;
  concurrency: number;
  rounds: number;
}

interface Contender {
  name: string;
  /** One operation for caller `i`. */
  run(i: number): Promise<unknown>;
}

interface Sample {
  perSecond: number;
  p50: number;
  p99: number;
}

function parseOptions(argv: string[]): Options {
  const options: Options = { attempts: 20_000, callers: 2_000, concurrency: 64, rounds: 3 };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i]?.replace(/^--/, '') as keyof Options;
    const value = Number(argv[i + 1]);
    if (!(name in options) || !Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(`unknown option or bad value: ${argv[i]} ${argv[i + 1]}`);
    }
    options[name] = value;
  }
  return options;
}

async function measure(contender: Contender, options: Options): Promise<Sample> {
  const latencies = new Float64Array(options.attempts);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      for (let n = next++; n < options.attempts; n = next++) {
        const t = performance.now();
        await contender.run(n % options.callers);
        latencies[n] = performance.now() - t;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort();
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { perSecond: options.attempts / seconds, p50: at(0.5), p99: at(0.99) };
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const prefix = `bench:${Date.now()}:`;
  client.defineCommand('benchIncr', {
    numberOfKeys: 1,
    lua: "return redis.call('INCR', KEYS[1])",
  });
  const incr = client as unknown as { benchIncr(key: string): Promise<number> };
  const contenders: Contender[] = [
    { name: 'floor: EVALSHA INCR', run: (i) => incr.benchIncr(`${prefix}floor:${i}`) },
    { name: 'floor: GET', run: (i) => client.get(`${prefix}get:${i}`) },
  ];
  const limiterFor = (algorithm: Algorithm) =>
    new Limiter(new RedisStore({ client, prefix }), {
      name: algorithm,
      algorithm,
      limit: 1_000_000, // never refuses: every call is a spend
      window: '1h',
      ...(algorithm === 'sliding-log' && { limit: 100_000 }),
    });
  for (const algorithm of ALGORITHMS) {
    const limiter = limiterFor(algorithm);
    contenders.push(
      { name: `redlimit ${algorithm}, 1 key`, run: (i) => limiter.consume(`ip:${i}`) },
      {
        name: `redlimit ${algorithm}, 2 keys`,
        run: (i) => limiter.consume([`ip:${i}`, `email:${i}`]),
      },
    );
  }
  try {
    await Promise.all(Array.from({ length: 100 }, () => client.ping())); // warm the pool
    for (const contender of contenders) await contender.run(0); // load scripts
    const samples = new Map<string, Sample[]>(contenders.map((c) => [c.name, []]));
    for (let round = 0; round < options.rounds; round++) {
      const order = contenders.map((_, i) => contenders[(i + round) % contenders.length]!);
      for (const contender of order) {
        samples.get(contender.name)!.push(await measure(contender, options));
        process.stderr.write('.');
      }
    }
    process.stderr.write('\n');
    const median = (values: number[]) =>
      values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const floor = median(samples.get(contenders[0]!.name)!.map((s) => s.perSecond));
    const info = await client.info('server');
    console.log(
      `Redis ${/redis_version:(\S+)/.exec(info)?.[1]}, Node ${process.version}; ${options.attempts} ` +
        `decisions over ${options.callers} callers, ${options.concurrency} in flight, median of ` +
        `${options.rounds} rotated rounds\n`,
    );
    console.log('| contender | decisions/s | p50 ms | p99 ms | × floor |');
    console.log('|---|---:|---:|---:|---:|');
    for (const contender of contenders) {
      const runs = samples.get(contender.name)!;
      const perSecond = median(runs.map((s) => s.perSecond));
      console.log(
        `| ${contender.name} | ${Math.round(perSecond)} | ${median(runs.map((s) => s.p50)).toFixed(2)} | ` +
          `${median(runs.map((s) => s.p99)).toFixed(2)} | ${(perSecond / floor).toFixed(2)} |`,
      );
    }
  } finally {
    let cursor = '0';
    do {
      const [nextCursor, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = nextCursor;
      if (keys.length) await client.del(...keys);
    } while (cursor !== '0');
    client.disconnect();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
