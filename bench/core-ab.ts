// The decision path of two builds side by side in one process (an A/B of a change to the core or
// the stores): this checkout's `lib/` and `DIR/lib` (`git archive <rev> lib lua | tar -x -C DIR`),
// each with its own `RedisStore` on one private redis-server (and a `MemoryStore`), called in
// alternating rounds so the machine's noise falls on both alike.
//
//   npx ts-node --transpile-only bench/core-ab.ts --baseline DIR [--rounds 12] [--calls 20000] [--board]
//     [--overrides none|one]
//
// `--board`: this checkout's limiters report to decision events that the ops board's recorder
// watches (as RedlimitBoardModule sets them up), flushing to the store's board book every 2 s: the
// cost of the board's bookkeeping on the allowed path.
// `--overrides none`: this checkout's limiters run under live limits (a PolicyOverrides polling
// its store every 500 ms) with no override in force; `one`: with one global override in force on
// every policy (a limit as high, or shadow off for the bucket, whose limit cannot change): the
// cost of live limits on the hot path.
//
// Shapes: fixed window on 1 key, coalesced (64 in flight) and `coalesce: false` (one at a time);
// 2 keys coalesced; token bucket coalesced; an attempt (`begin()` then keep) coalesced; fixed
// window with `failMode: 'memory'` (the fleet's heartbeat running); the same
// fixed window on a MemoryStore (Node alone). Per round: decisions/s (wall clock), Node CPU µs
// per decision (`process.cpuUsage()`) and Redis CPU µs per decision (`INFO cpu`); this build
// over the baseline per round, median [95 % bootstrap interval]. Not a test: figures for a note.
import Redis from 'ioredis';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BoardRecorder } from '../lib/board/board-recorder';
import { PolicyOverrides } from '../lib/core/policy-overrides';
import { benchRedis } from './support/redis.util';
import { bootstrapMedian, seededRandom, withInterval } from './support/stats.util';

type Lib = typeof import('../lib');
type Shape = 'fw1' | 'fw1-alone' | 'fw2' | 'tb1' | 'begin' | 'fleet' | 'memory';

const SHAPES: ReadonlyArray<{ shape: Shape; name: string; inFlight: number }> = [
  { shape: 'fw1', name: 'fixed window, 1 key, coalesced', inFlight: 64 },
  { shape: 'fw1-alone', name: 'fixed window, 1 key, coalesce: false, one at a time', inFlight: 1 },
  { shape: 'fw2', name: 'fixed window, 2 keys, coalesced', inFlight: 64 },
  { shape: 'tb1', name: 'token bucket, 1 key, coalesced', inFlight: 64 },
  { shape: 'begin', name: 'begin() and keep, 1 key, coalesced', inFlight: 64 },
  { shape: 'fleet', name: "fixed window, 1 key, coalesced, failMode 'memory'", inFlight: 64 },
  { shape: 'memory', name: 'fixed window, 1 key, MemoryStore', inFlight: 64 },
];

interface Build {
  readonly name: string;
  readonly run: Record<Shape, () => Promise<unknown>>;
  close(): Promise<void>;
}

const NEVER = 1_000_000_000;

async function build(
  name: string,
  url: string,
  libDir: string | undefined,
  board = false,
  overridden?: string,
): Promise<Build> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- chosen at run time (A/B)
  const lib = require(libDir ? resolve(libDir) : '../lib') as Lib;
  const events = board ? new lib.DecisionEvents() : undefined;
  const clients = [new Redis(url), new Redis(url)];
  const prefix = `ab:${name.replace(/\W/g, '')}:${Date.now()}`;
  const coalesced = new lib.RedisStore({ client: clients[0]!, prefix });
  const overrides =
    overridden === undefined ? undefined : new PolicyOverrides(coalesced.overrides());
  await overrides?.start();
  const options = { ...(events && { events }), ...(overrides && { overrides }) };
  const alone = new lib.RedisStore({ client: clients[1]!, prefix: `${prefix}:a`, coalesce: false });
  const memory = new lib.MemoryStore();
  const fixed = { name: 'fw', algorithm: 'fixed-window' as const, limit: NEVER, window: '1h' };
  const bucket = {
    name: 'tb',
    algorithm: 'token-bucket' as const,
    limit: NEVER,
    window: '1h',
  };
  const fw = new lib.Limiter(coalesced, fixed, options);
  const fwAlone = new lib.Limiter(alone, fixed, options);
  const tb = new lib.Limiter(coalesced, bucket, options);
  const fwMemory = new lib.Limiter(memory, fixed, options);
  // (From issue 30 on, a limiter with this fail mode makes its process beat in the store's fleet.)
  const fwFleet = new lib.Limiter(
    coalesced,
    { ...fixed, name: 'fwm', failMode: 'memory' },
    options,
  );
  // One recorder, as an app has (on the store its module uses).
  const recorders = events
    ? [new BoardRecorder(events, coalesced.board(), { limiters: () => [fw, tb, fwFleet] })]
    : [];
  for (const recorder of recorders) recorder.start();
  if (overrides !== undefined && overridden === 'one') {
    await overrides.set(fw.policy, { limit: NEVER - 1 });
    await overrides.set(fwFleet.policy, { limit: NEVER - 1 });
    await overrides.set(tb.policy, { shadow: false });
  }
  return {
    name,
    run: {
      fw1: () => fw.consume('caller'),
      'fw1-alone': () => fwAlone.consume('caller'),
      fw2: () => fw.consume(['ip:caller', 'email:caller']),
      tb1: () => tb.consume('caller'),
      begin: () => fw.begin('begin:caller'),
      fleet: () => fwFleet.consume('caller'),
      memory: () => fwMemory.consume('caller'),
    },
    close: async () => {
      overrides?.stop();
      for (const recorder of recorders) await recorder.stop();
      await Promise.all(clients.map((c) => c.quit()));
    },
  };
}

interface Sample {
  readonly rate: number;
  readonly nodeUs: number;
  readonly redisUs: number;
}

async function redisCpu(admin: Redis): Promise<number> {
  const cpu = await admin.info('cpu');
  const read = (field: string) => Number(new RegExp(`^${field}:([\\d.]+)`, 'm').exec(cpu)?.[1]);
  return read('used_cpu_user') + read('used_cpu_sys');
}

async function round(
  fn: () => Promise<unknown>,
  calls: number,
  inFlight: number,
  admin: Redis,
): Promise<Sample> {
  const redisBefore = await redisCpu(admin);
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  let issued = 0;
  const worker = async () => {
    while (issued < calls) {
      issued++;
      await fn();
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const { user, system } = process.cpuUsage(cpu);
  const redisAfter = await redisCpu(admin);
  return {
    rate: calls / seconds,
    nodeUs: (user + system) / calls,
    redisUs: ((redisAfter - redisBefore) * 1e6) / calls,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      baseline: { type: 'string' },
      rounds: { type: 'string', default: '12' },
      calls: { type: 'string', default: '20000' },
      shapes: { type: 'string', default: SHAPES.map((s) => s.shape).join(',') },
      seed: { type: 'string', default: '7' },
      board: { type: 'boolean', default: false },
      overrides: { type: 'string' },
    },
  });
  if (!values.baseline) throw new Error('--baseline DIR is required (a checkout of lib/ and lua/)');
  const rounds = Number(values.rounds);
  const calls = Number(values.calls);
  const shapes = SHAPES.filter((s) => values.shapes.split(',').includes(s.shape));
  const redis = await benchRedis(undefined);
  const admin = new Redis(redis.url);
  if (values.overrides !== undefined && !['none', 'one'].includes(values.overrides)) {
    throw new Error('--overrides takes none or one');
  }
  const builds = [
    await build('this checkout', redis.url, undefined, values.board, values.overrides),
    await build('baseline', redis.url, resolve(values.baseline, 'lib')),
  ];
  for (const b of builds)
    for (const s of shapes) await round(b.run[s.shape], calls / 4, s.inFlight, admin);
  const samples = new Map<string, Sample[]>();
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 === 0 ? builds : [...builds].reverse();
    for (const s of shapes) {
      for (const b of order) {
        const key = `${s.shape}|${b.name}`;
        samples.set(key, [
          ...(samples.get(key) ?? []),
          await round(b.run[s.shape], calls, s.inFlight, admin),
        ]);
      }
    }
  }
  const random = seededRandom(Number(values.seed));
  const estimate = (xs: number[]) => bootstrapMedian(xs, random, 10_000);
  console.log(
    `${rounds} rounds of ${calls} decisions per shape and build, alternating; this checkout over ` +
      `the baseline (${values.baseline}) per round, median [95 %]`,
  );
  console.log(
    '| shape | decisions/s × | Node CPU µs/decision (this − baseline) | Redis CPU µs/decision (this − baseline) | this: /s, Node µs, Redis µs |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const s of shapes) {
    const now = samples.get(`${s.shape}|this checkout`)!;
    const before = samples.get(`${s.shape}|baseline`)!;
    const per = (f: (a: Sample, b: Sample) => number) =>
      estimate(now.map((a, k) => f(a, before[k]!)));
    const med = (f: (a: Sample) => number) => estimate(now.map(f)).value;
    console.log(
      `| ${s.name} | ${withInterval(per((a, b) => a.rate / b.rate))} | ${withInterval(per((a, b) => a.nodeUs - b.nodeUs))} | ` +
        `${withInterval(per((a, b) => a.redisUs - b.redisUs))} | ${Math.round(med((a) => a.rate)).toLocaleString('en')}, ` +
        `${med((a) => a.nodeUs).toFixed(2)}, ${med((a) => a.redisUs).toFixed(2)} |`,
    );
  }
  for (const b of builds) await b.close();
  admin.disconnect();
  await redis.stop();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
