// Side-by-side cost of a rate-limit decision on Redis: redlimit against the physical floor and the
// peers, on one Redis, in one run.
//
//   npm run bench -- [--attempts 20000] [--callers 2000] [--concurrency 64] [--rounds 5]
//     [--redis redis://127.0.0.1:6379/15] [--only <regexp>] [--out bench/results] [--no-write]
//
// Every contender runs the same workload (attempts spread over callers, `concurrency` in flight,
// on one warmed ioredis client). After a warm-up pass, contenders are interleaved in rotated
// rounds: drift on a shared machine lands on all of them, and each ratio is taken within a round
// (contender rate / floor rate in that round), then the median over the rounds is reported. The
// floor is a trivial EVALSHA INCR on the same client. Per contender it also reports Redis time per
// decision (`INFO commandstats` after `CONFIG RESETSTAT`), Redis process CPU (`INFO cpu`), Node CPU
// (`process.cpuUsage`), and, in a separate pass with default key names, keys and bytes per caller
// (`MEMORY USAGE` over the keys it created). Performance is measured here, never asserted in tests.
//
// Without --redis or REDIS_URL a private redis-server is started on a free port. Results go to
// bench/results/compare.md and compare.svg (not with --only, which is for profiling one contender).
import { createHash } from 'node:crypto';
import Redis from 'ioredis';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { type Algorithm, ALGORITHMS, Limiter, RedisStore } from '../lib';
import { type Bar, barChartSvg } from './support/bar-chart.util';
import { parseOptions } from './support/options.util';
import { ProgressBar } from './support/progress.util';
import {
  allKeys,
  benchRedis,
  deleteKeys,
  memoryUsage,
  redisCost,
  redisVersion,
} from './support/redis.util';
import {
  describeMachine,
  machine,
  markdownTable,
  RESULTS_DIR,
  writeResult,
} from './support/report.util';
import { grouped, median, quantile } from './support/stats.util';

const USAGE = `npm run bench -- [options]
  --attempts N     decisions per contender per round (default 20000)
  --callers N      distinct callers the decisions are spread over (default 2000)
  --concurrency N  decisions in flight (default 64)
  --rounds N       measured rounds, order rotated each round (default 5)
  --redis URL      Redis to use (default: REDIS_URL, else a private redis-server)
  --only REGEXP    run only matching contenders (and the floor); writes no results
  --sample N       callers in the memory pass (default 200)
  --out DIR        where results go (default bench/results)
  --no-write       print the tables only`;

type Kind = Bar['kind'];

interface Contender {
  readonly name: string;
  readonly kind: Kind;
  /** One decision for caller `i`. */
  run(i: number): Promise<unknown>;
}

/** One contender's run in one round. */
interface Sample {
  perSecond: number;
  p50: number;
  p99: number;
  nodeCpuUs: number;
  redisCommandUs: number;
  redisCpuUs: number;
}

interface Footprint {
  keysPerCaller: number;
  bytesPerCaller: number;
}

/**
 * Key names and limits of one pass. Throughput: a run prefix and limits that never refuse (every
 * decision is a spend). Memory: default key names and a realistic 10 per 15 minutes, since a
 * token bucket or GCRA state under a huge limit refills (and expires) within milliseconds.
 */
interface Pass {
  readonly prefix: string;
  policy(algorithm: Algorithm): string;
  limit(algorithm: Algorithm): number;
  readonly windowMs: number;
}

const FLOOR = 'floor: EVALSHA INCR';
const HOUR_MS = 3_600_000;
const MEMORY_LIMIT = 10;
const MEMORY_WINDOW_MS = 900_000;

function ipOf(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

function contendersFor(client: Redis, pass: Pass, callers: number): Contender[] {
  const { prefix, windowMs } = pass;
  const ips = Array.from({ length: callers }, (_, i) => ipOf(i));
  const ipKeys = ips.map((ip) => `ip:${ip}`);
  const pairs = ips.map((ip, i) => [`ip:${ip}`, `email:user${i}@example.com`]);
  client.defineCommand('benchIncr', { numberOfKeys: 1, lua: "return redis.call('INCR', KEYS[1])" });
  const incr = client as unknown as { benchIncr(key: string): Promise<number> };
  const floorKeys = ipKeys.map((key) => `${prefix}floor:${key}`);
  const getKeys = ipKeys.map((key) => `${prefix}get:${key}`);
  const list: Contender[] = [
    { name: FLOOR, kind: 'reference', run: (i) => incr.benchIncr(floorKeys[i]!) },
    { name: 'floor: GET', kind: 'reference', run: (i) => client.get(getKeys[i]!) },
  ];
  const store = new RedisStore({ client, prefix: `${prefix}rl:` });
  for (const algorithm of ALGORITHMS) {
    const limiter = new Limiter(store, {
      name: pass.policy(algorithm),
      algorithm,
      limit: pass.limit(algorithm),
      window: windowMs,
    });
    list.push(
      {
        name: `redlimit ${algorithm}, 1 key`,
        kind: 'ours',
        run: (i) => limiter.consume(ipKeys[i]!),
      },
      {
        name: `redlimit ${algorithm}, 2 keys`,
        kind: 'ours',
        run: (i) => limiter.consume(pairs[i]!),
      },
    );
  }
  // rate-limiter-flexible in its default ioredis mode: EVALSHA of its INCR + PTTL script.
  const flexible = new RateLimiterRedis({
    storeClient: client,
    keyPrefix: `${prefix}rlflx`,
    points: pass.limit('fixed-window'),
    duration: windowMs / 1000,
  });
  // @nest-lab/throttler-storage-redis as @nestjs/throttler's ThrottlerGuard calls it: the key is
  // the guard's SHA-256 of class, handler, throttler name and tracker.
  const storage = new ThrottlerStorageRedisService(client);
  if (storage.redis !== client)
    throw new Error('ThrottlerStorageRedisService did not take the client');
  const throttlerKeys = ips.map(
    (ip) =>
      prefix + createHash('sha256').update(`BenchController-hello-default-${ip}`).digest('hex'),
  );
  list.push(
    {
      name: 'rate-limiter-flexible consume',
      kind: 'peer',
      run: (i) => flexible.consume(ips[i]!),
    },
    {
      name: '@nest-lab/throttler-storage-redis increment',
      kind: 'peer',
      run: (i) =>
        storage.increment(
          throttlerKeys[i]!,
          windowMs,
          pass.limit('fixed-window'),
          windowMs,
          'default',
        ),
    },
  );
  return list;
}

/** `attempts` decisions, `concurrency` at a time, caller n % callers; latencies in ms. */
async function measure(
  contender: Contender,
  attempts: number,
  callers: number,
  concurrency: number,
): Promise<Pick<Sample, 'perSecond' | 'p50' | 'p99' | 'nodeCpuUs'>> {
  const latencies = new Float64Array(attempts);
  let next = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let n = next++; n < attempts; n = next++) {
        const t = performance.now();
        await contender.run(n % callers);
        latencies[n] = performance.now() - t;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  latencies.sort();
  return {
    perSecond: attempts / seconds,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    nodeCpuUs: (used.user + used.system) / attempts,
  };
}

/** Keys and bytes a contender leaves per caller after `spends` decisions for each of `sample`. */
async function footprint(
  client: Redis,
  contender: Contender,
  sample: number,
  spends: number,
  baseline: ReadonlySet<string>,
): Promise<Footprint> {
  for (let s = 0; s < spends; s++) {
    await Promise.all(Array.from({ length: sample }, (_, i) => contender.run(i)));
  }
  const created = [...(await allKeys(client))].filter((key) => !baseline.has(key));
  const bytes = await memoryUsage(client, created);
  for (let i = 0; i < created.length; i += 500) await client.unlink(...created.slice(i, i + 500));
  return { keysPerCaller: created.length / sample, bytesPerCaller: bytes / sample };
}

async function main(): Promise<void> {
  const options = parseOptions(
    process.argv.slice(2),
    {
      attempts: 20_000,
      callers: 2_000,
      concurrency: 64,
      rounds: 5,
      redis: '',
      only: '',
      sample: 200,
      out: RESULTS_DIR,
      'no-write': false,
    },
    USAGE,
  );
  const redis = await benchRedis(options.redis);
  const client = new Redis(redis.url);
  const admin = new Redis(redis.url);
  const runPrefix = `bench:${process.pid}:${Date.now()}:`;
  try {
    const version = await redisVersion(client);
    const host = machine(version);
    const only = options.only ? new RegExp(options.only) : undefined;
    const contenders = contendersFor(
      client,
      {
        prefix: runPrefix,
        policy: (algorithm) => algorithm,
        // Never refuses; a sliding log holds one member per spend, so its limit is capped lower.
        limit: (algorithm) => (algorithm === 'sliding-log' ? 100_000 : 1_000_000),
        windowMs: HOUR_MS,
      },
      options.callers,
    ).filter((c) => c.name === FLOOR || !only || only.test(c.name));
    const memorySpends = 5;
    const progress = new ProgressBar(contenders.length * (options.rounds + 2));

    await Promise.all(Array.from({ length: 200 }, () => client.ping())); // warm the connection
    const warmUp = Math.max(1_000, Math.floor(options.attempts / 4));
    for (const contender of contenders) {
      progress.tick(`warm-up: ${contender.name}`);
      await measure(contender, warmUp, options.callers, options.concurrency);
    }

    const samples = new Map<string, Sample[]>(contenders.map((c) => [c.name, []]));
    for (let round = 0; round < options.rounds; round++) {
      const order = contenders.map((_, i) => contenders[(i + round) % contenders.length]!);
      for (const contender of order) {
        progress.tick(`round ${round + 1}/${options.rounds}: ${contender.name}`);
        await admin.config('RESETSTAT');
        const cpuBefore = (await redisCost(admin)).cpuSeconds;
        const run = await measure(
          contender,
          options.attempts,
          options.callers,
          options.concurrency,
        );
        const cost = await redisCost(admin);
        samples.get(contender.name)!.push({
          ...run,
          redisCommandUs: cost.commandUsec / options.attempts,
          redisCpuUs: ((cost.cpuSeconds - cpuBefore) * 1e6) / options.attempts,
        });
      }
    }
    await deleteKeys(client, `${runPrefix}*`);

    // Memory: fresh instances with default key names (prefix 'rl:', 'rlflx', the guard's hash).
    const footprints = new Map<string, Footprint>();
    const baseline = await allKeys(client);
    const memoryContenders = contendersFor(
      client,
      { prefix: '', policy: () => 'api', limit: () => MEMORY_LIMIT, windowMs: MEMORY_WINDOW_MS },
      options.sample,
    ).filter((c) => samples.has(c.name));
    for (const contender of memoryContenders) {
      progress.tick(`memory: ${contender.name}`);
      footprints.set(
        contender.name,
        await footprint(client, contender, options.sample, memorySpends, baseline),
      );
    }
    progress.end();

    const floorRuns = samples.get(FLOOR)!;
    /** Median over rounds of a's value / b's value in the same round. */
    const relative = (a: string, b: string, field: keyof Sample = 'perSecond') =>
      median(samples.get(a)!.map((s, r) => s[field] / samples.get(b)![r]![field]));
    const rows = contenders.map((c) => {
      const runs = samples.get(c.name)!;
      const of = (field: keyof Sample) => median(runs.map((s) => s[field]));
      const memory = footprints.get(c.name);
      return {
        contender: c,
        ratio: relative(c.name, FLOOR),
        cells: [
          c.name,
          grouped(of('perSecond')),
          relative(c.name, FLOOR).toFixed(2),
          middleHalf(runs.map((s, r) => s.perSecond / floorRuns[r]!.perSecond)),
          of('p50').toFixed(2),
          of('p99').toFixed(2),
          relative(c.name, FLOOR, 'p99').toFixed(2),
          of('redisCommandUs').toFixed(1),
          of('redisCpuUs').toFixed(1),
          of('nodeCpuUs').toFixed(1),
          memory ? String(memory.keysPerCaller) : '–',
          memory ? memory.bytesPerCaller.toFixed(0) : '–',
        ],
      };
    });
    const setup =
      `${grouped(options.attempts)} decisions per contender per round over ` +
      `${grouped(options.callers)} callers, ${options.concurrency} in flight on one ioredis ` +
      `client; ${options.rounds} rotated rounds after a warm-up pass; memory after ` +
      `${memorySpends} decisions for each of ${options.sample} callers, limit ${MEMORY_LIMIT} per ` +
      `${MEMORY_WINDOW_MS / 60_000} min, default key names`;
    const table = markdownTable(
      [
        'contender',
        'decisions/s',
        '× floor',
        'middle half of rounds',
        'p50 ms',
        'p99 ms',
        'p99 × floor',
        'Redis µs/decision (commands)',
        'Redis CPU µs/decision',
        'Node CPU µs/decision',
        'keys/caller',
        'bytes/caller',
      ],
      rows.map((r) => r.cells),
    );
    const targets = only ? '' : targetsTable(relative, footprints);
    const markdown = [
      '# redlimit vs the floor and the peers (`npm run bench`)',
      '',
      `Measured ${new Date().toISOString().slice(0, 10)}: ${describeMachine(host)}.`,
      '',
      `${setup}.`,
      '',
      'Method: each round runs every contender once, in an order rotated by one each round; a',
      "contender's ratio is its rate (or p99) divided by the floor's in the same round, and the",
      'median of those per-round ratios is reported (absolute numbers drift on a shared machine;',
      'ratios taken within a round much less), with the middle half of the per-round ratios (25th',
      'to 75th percentile) to show how well rounds agree. decisions/s, p50 and p99 are medians over',
      'the rounds.',
      '"Redis µs (commands)" is `INFO commandstats` time of the commands the client sent (a script',
      'counts once, with what it runs inside) after `CONFIG RESETSTAT`; "Redis CPU" is the server',
      'process\'s user + system CPU (`INFO cpu`), which adds networking and parsing; "Node CPU" is',
      '`process.cpuUsage()` of the bench process. Bytes: `MEMORY USAGE … SAMPLES 0` summed over the',
      'keys a contender created. Two keys = one caller charged on an ip key and an email key at once.',
      '',
      table,
      '',
      targets,
    ].join('\n');
    console.log(markdown);
    if (!only && !options['no-write']) {
      const floorRate = median(floorRuns.map((s) => s.perSecond));
      const svg = barChartSvg({
        title: 'Decisions per second, as a ratio to the floor (higher is better)',
        subtitle:
          `${options.concurrency} in flight, ${grouped(options.callers)} callers, median of ` +
          `${options.rounds} rotated rounds; Node ${host.node}, Redis ${host.redis}, ${host.cores} cores`,
        referenceLabel: `floor: EVALSHA INCR = 1.0 (${grouped(floorRate)}/s)`,
        bars: rows.map((r) => ({
          label: r.contender.name,
          value: r.ratio,
          kind: r.contender.kind,
        })),
      });
      const written = [
        writeResult(options.out, 'compare.md', markdown),
        writeResult(options.out, 'compare.svg', svg),
      ];
      process.stderr.write(`wrote ${written.join(', ')}\n`);
    }
  } finally {
    await deleteKeys(client, `${runPrefix}*`).catch(() => 0);
    client.disconnect();
    admin.disconnect();
    await redis.stop();
  }
}

/** The interquartile range of per-round ratios, `0.52–0.58`: how much the rounds agree. */
function middleHalf(ratios: readonly number[]): string {
  const sorted = [...ratios].sort((a, b) => a - b);
  return `${quantile(sorted, 0.25).toFixed(2)}–${quantile(sorted, 0.75).toFixed(2)}`;
}

/** The targets, each with what was measured and by how much it is met or missed. */
function targetsTable(
  relative: (a: string, b: string, field?: keyof Sample) => number,
  footprints: ReadonlyMap<string, Footprint>,
): string {
  const fw = 'redlimit fixed-window, 1 key';
  const peers = ['rate-limiter-flexible consume', '@nest-lab/throttler-storage-redis increment'];
  const rows: string[][] = [];
  const check = (target: string, measured: number, bound: number, atMost = false, unit = '×') => {
    const met = atMost ? measured <= bound : measured >= bound;
    const by = atMost ? bound - measured : measured - bound;
    const digits = unit === '×' ? 2 : 1;
    rows.push([
      target,
      `${measured.toFixed(digits)}${unit}`,
      `${met ? 'met' : 'missed'} (${by >= 0 ? '+' : ''}${by.toFixed(digits)}${unit})`,
    ]);
  };
  check('fixed window, 1 key ≥ 0.9× the floor', relative(fw, FLOOR), 0.9);
  for (const peer of peers) check(`fixed window, 1 key ≥ 1.1× ${peer}`, relative(fw, peer), 1.1);
  check("fixed window, 1 key: p99 ≤ 1.2× the floor's", relative(fw, FLOOR, 'p99'), 1.2, true);
  check(
    'fixed window, 2 keys ≥ 0.8× the floor',
    relative('redlimit fixed-window, 2 keys', FLOOR),
    0.8,
  );
  for (const algorithm of ALGORITHMS.filter((a) => a !== 'fixed-window')) {
    check(
      `${algorithm}, 1 key ≥ 0.75× the floor`,
      relative(`redlimit ${algorithm}, 1 key`, FLOOR),
      0.75,
    );
  }
  for (const algorithm of ALGORITHMS.filter((a) => a !== 'fixed-window')) {
    check(
      `${algorithm}, 2 keys ≥ 0.8× the floor`,
      relative(`redlimit ${algorithm}, 2 keys`, FLOOR),
      0.8,
    );
  }
  const bytes = footprints.get(fw)?.bytesPerCaller;
  if (bytes !== undefined) check('fixed window ≤ 72 bytes per caller', bytes, 72, true, ' B');
  const slidingKeys = footprints.get('redlimit sliding-window, 1 key')?.keysPerCaller;
  if (slidingKeys !== undefined) {
    check('sliding window ≤ 1 key per caller', slidingKeys, 1, true, ' keys');
  }
  return ['## Targets (issue 7)', '', markdownTable(['target', 'measured', 'verdict'], rows)].join(
    '\n',
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
