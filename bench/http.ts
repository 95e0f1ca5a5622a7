// What a limiter costs an HTTP endpoint, in CPU of the app process per request: the same Nest 11
// GET /hello on Express and on Fastify, (a) without a limiter, (b) with @Throttle + RedlimitGuard,
// (c) with @Attempt (its interceptor, and RedlimitGuard finding no layer), (d) on the module's
// defaultPolicy only (RedlimitGuard as APP_GUARD), (e) with @nestjs/throttler's ThrottlerGuard on
// @nest-lab/throttler-storage-redis. `--baseline DIR` also runs (b)-(d) on another checkout's
// redlimit (`DIR/lib/nest`, e.g. `git archive <commit> lib lua | tar -x -C DIR`) in the same
// shuffled rounds, and reports this checkout over it: an A/B of two builds on one machine.
//
//   npm run bench:http -- [--duration 5] [--rounds 10] [--platforms express,fastify] [--no-write] …
//   (`npm run bench:http -- --help` lists every option)
//
// The load generator (autocannon's CLI, a child process per run) is pinned to CPU 0 with taskset;
// every app (its own child process, bench/http-app.ts) and the private Redis to CPU 1, so the
// generator never takes CPU from what is measured. This process orchestrates from CPU 0 and is
// idle during a run. The headline is the app's CPU µs per request (`process.cpuUsage()` of the app,
// over IPC, before and after a run) beside req/s; per round, each variant's CPU per request minus
// the same platform's no-limiter app's in the same round is its overhead, reported as the median
// over rounds with a 95 % bootstrap interval. Rounds run every app once in an order shuffled anew
// (seeded). The limits never refuse (every response must be a 200: checked). Every request comes
// from 127.0.0.1: one caller key for both limiters. Targets (issue 13) are judged on the intervals,
// and not at all on a loaded machine, as in `npm run bench`.
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import Redis from 'ioredis';
import type { AppMessage, Platform, Variant } from './http-app';
import { type Bar, barChartSvg } from './support/bar-chart.util';
import {
  nonNegative,
  parseCommandLine,
  positive,
  positiveInteger,
  usageError,
} from './support/cli.util';
import {
  CpuAccount,
  describeLoad,
  LOAD_CHECK_OPTIONS,
  loadCheckSettings,
  loadedBecause,
  settle,
} from './support/load.util';
import { type Pinning, pinnedCommand, pinning, pinProcess } from './support/pin.util';
import { ProgressBar } from './support/progress.util';
import { benchRedis, deleteKeys, redisCost, redisVersion } from './support/redis.util';
import {
  describeMachine,
  machine,
  markdownTable,
  RESULTS_DIR,
  writeResult,
} from './support/report.util';
import {
  bootstrapMedian,
  type Estimate,
  grouped,
  median,
  seededRandom,
  shuffled,
  withInterval,
} from './support/stats.util';

const USAGE = `npm run bench:http -- [options]
  --duration S        seconds per app per round (default 5)
  --connections N     autocannon connections (default 32)
  --rounds N          measured rounds, order shuffled each round (default 10)
  --warmup S          seconds of warm-up per app before the rounds (default 3)
  --platforms LIST    express,fastify (default both)
  --variants LIST     which redlimit routes: throttle,attempt,default (default all three)
  --baseline DIR      also run them on the redlimit of DIR/lib/nest, and compare (A/B)
  --interceptor       also run the no-limiter app with a no-op APP_INTERCEPTOR (what Nest's
                      interceptor machinery alone costs; RedlimitModule registers one for @Attempt)
  --seed N            seed of the shuffles and the bootstrap (default: drawn, and printed)
  --resamples N       bootstrap resamples (default 10000)
  --no-pin            do not pin (default: load generator on CPU 0, apps and Redis on CPU 1)
  --redis URL         Redis to use (default: REDIS_URL, else a private redis-server, pinned)
  --max-load X        judge targets only if the 1-min load average at the start is ≤ X (default 0.5)
  --max-foreign X     ... and other processes used ≤ X cores during the run (default 0.1)
  --settle-seconds S  wait up to S for the load average to fall to --max-load first (default 120)
  --force-verdicts    judge targets even on a loaded machine (for development)
  --out DIR           where http.md and http.svg go (default bench/results)
  --no-write          print the tables only`;

const VARIANTS: ReadonlyArray<{ variant: Variant; name: string; kind: Bar['kind'] }> = [
  { variant: 'bare', name: 'no limiter', kind: 'reference' },
  { variant: 'interceptor', name: 'no limiter + no-op APP_INTERCEPTOR', kind: 'reference' },
  { variant: 'redlimit', name: '@Throttle + RedlimitGuard', kind: 'ours' },
  { variant: 'attempt', name: '@Attempt + RedlimitGuard', kind: 'ours' },
  { variant: 'default', name: 'defaultPolicy, RedlimitGuard as APP_GUARD', kind: 'ours' },
  { variant: 'throttler', name: 'ThrottlerGuard + throttler-storage-redis', kind: 'peer' },
];
const GENERATOR_CPU = 0;
const APP_CPU = 1;
/** Most app CPU per request over no limiter for @Throttle (issue 13), and @Attempt (issue 28). */
const OVERHEAD_TARGET_US = 15;
/** Least req/s as a share of the no-limiter app's (issue 28). */
const SPEED_TARGETS: Readonly<Record<Platform, number>> = { express: 0.9, fastify: 0.75 };
/** The redlimit variants by their --variants name. */
const ROUTES: Readonly<Record<string, Variant>> = {
  throttle: 'redlimit',
  attempt: 'attempt',
  default: 'default',
};

interface App {
  readonly platform: Platform;
  readonly variant: Variant;
  readonly name: string;
  readonly kind: Bar['kind'];
  /** The other checkout's redlimit it runs on (--baseline), if not this one's. */
  readonly baseline?: string;
  readonly url: string;
  readonly child: ChildProcess;
}

interface Sample {
  perSecond: number;
  p50: number;
  p99: number;
  appCpuUs: number;
  redisCpuUs: number;
}

/** What autocannon's CLI prints with --json (the parts used here). */
interface CannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  latency: { p50: number; p99: number };
  requests: { total: number };
}

function options() {
  const values = parseCommandLine(USAGE, {
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    platforms: { type: 'string', default: 'express,fastify' },
    interceptor: { type: 'boolean', default: false },
    variants: { type: 'string', default: 'throttle,attempt,default' },
    baseline: { type: 'string', default: '' },
    seed: { type: 'string' },
    resamples: { type: 'string', default: '10000' },
    'no-pin': { type: 'boolean', default: false },
    redis: { type: 'string', default: '' },
    ...LOAD_CHECK_OPTIONS,
    out: { type: 'string', default: RESULTS_DIR },
    'no-write': { type: 'boolean', default: false },
  });
  const platforms = values.platforms.split(',') as Platform[];
  if (platforms.some((p) => p !== 'express' && p !== 'fastify')) {
    usageError(`--platforms takes express and/or fastify; got ${values.platforms}`, USAGE);
  }
  const routes = values.variants.split(',');
  const unknownRoute = routes.find((r) => !(r in ROUTES));
  if (unknownRoute !== undefined) {
    usageError(`--variants takes throttle, attempt and/or default; got ${unknownRoute}`, USAGE);
  }
  return {
    routes: routes.map((r) => ROUTES[r]!),
    baseline: values.baseline,
    duration: positive(values.duration, 'duration', USAGE),
    connections: positiveInteger(values.connections, 'connections', USAGE),
    rounds: positiveInteger(values.rounds, 'rounds', USAGE),
    warmup: nonNegative(values.warmup, 'warmup', USAGE),
    platforms,
    interceptor: values.interceptor,
    seed:
      values.seed === undefined
        ? Date.now() % 2 ** 31
        : positiveInteger(values.seed, 'seed', USAGE),
    resamples: positiveInteger(values.resamples, 'resamples', USAGE),
    pin: !values['no-pin'],
    redis: values.redis,
    ...loadCheckSettings(values, USAGE),
    out: values.out,
    write: !values['no-write'],
  };
}

async function startApp(
  pin: Pinning,
  platform: Platform,
  entry: (typeof VARIANTS)[number],
  redisUrl: string,
  prefix: string,
  baseline?: string,
): Promise<App> {
  const [command, args] = pinnedCommand(pin, APP_CPU, process.execPath, [
    '-r',
    'ts-node/register/transpile-only',
    join(__dirname, 'http-app.ts'),
    platform,
    entry.variant,
    redisUrl,
    prefix,
    ...(baseline ? [join(baseline, 'lib', 'nest')] : []),
  ]);
  // taskset execs node in place: the child's pid is the app's, and the IPC channel reaches it.
  const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message: AppMessage) => {
      if ('port' in message) resolve(message.port);
    });
    child.once('exit', (code) => reject(new Error(`${platform} ${entry.variant} exited: ${code}`)));
  });
  const name = baseline ? `${entry.name} @ baseline` : entry.name;
  return { platform, ...entry, name, baseline, url: `http://127.0.0.1:${port}/hello`, child };
}

/** The app process's CPU time so far, in µs. */
function appCpu(app: App): Promise<number> {
  return new Promise((resolve) => {
    const listener = (message: AppMessage) => {
      if (!('cpuUs' in message)) return;
      app.child.off('message', listener);
      resolve(message.cpuUs);
    };
    app.child.on('message', listener);
    app.child.send('cpu');
  });
}

/** One autocannon run against `app`, in a child process on the generator's CPU. */
async function load(pin: Pinning, app: App, seconds: number, connections: number) {
  const cannon = require.resolve('autocannon/autocannon.js');
  const [command, args] = pinnedCommand(pin, GENERATOR_CPU, process.execPath, [
    cannon,
    '--json',
    '--no-progress',
    '-c',
    String(connections),
    '-d',
    String(seconds),
    app.url,
  ]);
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`autocannon exited with ${code}`);
  const result = JSON.parse(out.trim().split('\n').pop()!) as CannonResult;
  if (result.errors || result.non2xx || result.timeouts) {
    throw new Error(
      `${app.platform} ${app.name}: ${result.errors} errors, ${result.timeouts} timeouts, ` +
        `${result.non2xx} non-2xx responses (the limiter must never refuse here)`,
    );
  }
  return result;
}

async function main(): Promise<void> {
  const o = options();
  const pin = pinning(o.pin);
  const settled = await settle(o.limits.maxLoad, o.settleSeconds);
  const account = new CpuAccount(settled);
  const redis = await benchRedis(o.redis);
  if (redis.pid) account.add(redis.pid);
  const admin = new Redis(redis.url);
  const apps: App[] = [];
  const prefix = `bench-http:${process.pid}:`;
  try {
    const host = machine(await redisVersion(admin)); // before pinning: nproc counts allowed CPUs
    if (redis.private && redis.pid) pinProcess(pin, redis.pid, APP_CPU);
    pinProcess(pin, process.pid, GENERATOR_CPU);
    const entries = VARIANTS.filter(
      (v) =>
        (o.interceptor || v.variant !== 'interceptor') &&
        (v.kind !== 'ours' || o.routes.includes(v.variant)),
    );
    for (const platform of o.platforms) {
      for (const entry of entries) {
        const builds = entry.kind === 'ours' && o.baseline ? [undefined, o.baseline] : [undefined];
        for (const baseline of builds) {
          const app = await startApp(pin, platform, entry, redis.url, prefix, baseline);
          account.add(app.child.pid!);
          apps.push(app);
        }
      }
    }
    const progress = new ProgressBar(apps.length * (o.rounds + 1));
    for (const app of apps) {
      progress.tick(`warm-up: ${app.platform} ${app.name}`);
      if (o.warmup > 0) await load(pin, app, o.warmup, o.connections);
    }
    const random = seededRandom(o.seed);
    const samples = new Map<App, Sample[]>(apps.map((app) => [app, []]));
    for (let round = 0; round < o.rounds; round++) {
      for (const app of shuffled(apps, random)) {
        progress.tick(`round ${round + 1}/${o.rounds}: ${app.platform} ${app.name}`);
        await admin.config('RESETSTAT');
        const redisBefore = (await redisCost(admin)).cpuSeconds;
        const cpuBefore = await appCpu(app);
        const result = await load(pin, app, o.duration, o.connections);
        const appCpuUs = (await appCpu(app)) - cpuBefore;
        const redisCpu = (await redisCost(admin)).cpuSeconds - redisBefore;
        const requests = result.requests.total;
        samples.get(app)!.push({
          perSecond: requests / result.duration,
          p50: result.latency.p50,
          p99: result.latency.p99,
          appCpuUs: appCpuUs / requests,
          redisCpuUs: (redisCpu * 1e6) / requests,
        });
      }
    }
    progress.end();
    const loadReport = account.report();
    const loaded = loadedBecause(loadReport, o.limits);
    const notJudged = o.forceVerdicts ? undefined : loaded;

    const bootstrap = seededRandom(o.seed + 1);
    const estimate = (values: number[]) => bootstrapMedian(values, bootstrap, o.resamples);
    const find = (platform: Platform, variant: Variant, baseline?: string) =>
      apps.find(
        (a) => a.platform === platform && a.variant === variant && a.baseline === baseline,
      )!;
    const bare = (app: App) => find(app.platform, 'bare');
    /** Per round: f(a's sample, b's sample). */
    const perRound = (a: App, b: App, f: (x: Sample, y: Sample) => number) =>
      samples.get(a)!.map((s, r) => f(s, samples.get(b)![r]!));
    const overhead = (a: App, b = bare(a)) =>
      estimate(perRound(a, b, (x, y) => x.appCpuUs - y.appCpuUs));
    const speed = (a: App) => estimate(perRound(a, bare(a), (x, y) => x.perSecond / y.perSecond));
    const of = (app: App, field: keyof Sample) => median(samples.get(app)!.map((s) => s[field]));
    const signed = (e: Estimate) => {
      const f = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(1)}`;
      return `${f(e.value)} [${f(e.low)}, ${f(e.high)}]`;
    };
    const rows = apps.map((app) => [
      app.platform,
      app.name,
      grouped(of(app, 'perSecond')),
      app.variant === 'bare' ? '1.00' : withInterval(speed(app)),
      of(app, 'appCpuUs').toFixed(1),
      app.variant === 'bare' ? '–' : signed(overhead(app)),
      of(app, 'redisCpuUs').toFixed(1),
      of(app, 'p50').toFixed(1),
      of(app, 'p99').toFixed(1),
    ]);
    const verdict = (met: boolean) =>
      notJudged ? 'not judged (machine loaded)' : met ? 'met' : 'missed';
    const targets: string[][] = [];
    const routeName = { redlimit: '@Throttle', attempt: '@Attempt', default: 'defaultPolicy' };
    for (const platform of o.platforms) {
      for (const variant of o.routes) {
        const ours = find(platform, variant);
        const label = `${platform}: ${routeName[variant as keyof typeof routeName]}`;
        const overBare = overhead(ours);
        const overThrottler = overhead(ours, find(platform, 'throttler'));
        const fast = speed(ours);
        targets.push(
          [
            `${label} app CPU µs/request over no limiter`,
            signed(overBare),
            `≤ +${OVERHEAD_TARGET_US}`,
            verdict(overBare.high <= OVERHEAD_TARGET_US),
          ],
          [
            `${label} req/s × no limiter`,
            withInterval(fast),
            `≥ ${SPEED_TARGETS[platform].toFixed(2)}`,
            verdict(fast.low >= SPEED_TARGETS[platform]),
          ],
          [
            `${label} over ThrottlerGuard + throttler-storage-redis`,
            signed(overThrottler),
            '< 0 (below ThrottlerGuard)',
            verdict(overThrottler.high < 0),
          ],
        );
      }
    }
    // This checkout over the baseline's, per round: CPU µs/request and req/s.
    const ab: string[][] = [];
    if (o.baseline) {
      for (const platform of o.platforms) {
        for (const variant of o.routes) {
          const now = find(platform, variant);
          const before = find(platform, variant, o.baseline);
          ab.push([
            platform,
            now.name,
            signed(overhead(now, before)),
            withInterval(estimate(perRound(now, before, (x, y) => x.perSecond / y.perSecond))),
          ]);
        }
      }
    }
    const pinned = pin.taskset
      ? `autocannon pinned to CPU ${GENERATOR_CPU}, the apps${redis.private ? ' and Redis' : ''} ` +
        `to CPU ${APP_CPU} (taskset)${redis.private ? '' : '; the given Redis is not pinned'}`
      : `**not pinned: ${pin.reason}**: the load generator shares the CPUs with the apps and ` +
        'Redis, so CPU per request is measured but req/s is not what the app alone would do';
    const markdown = [
      '# What a limiter costs an endpoint (`npm run bench:http`)',
      '',
      `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: ` +
        `${describeMachine(host)}.`,
      '',
      describeLoad(loadReport, o.limits) +
        (loaded ? ` **This run: ${loaded}${o.forceVerdicts ? ' (verdicts forced)' : ''}.**` : ''),
      '',
      `autocannon (CLI, a child process per run), ${o.connections} connections, ${o.duration} s ` +
        `per app per round, ${o.rounds} rounds in an order shuffled every round (seed ${o.seed}) ` +
        `after ${o.warmup} s of warm-up per app; ${pinned}. Nest 11, GET /hello returning a small ` +
        'JSON object, each app in its own child process. RedlimitGuard: a fixed-window policy; ' +
        'ThrottlerGuard: one throttler; both with limits that never refuse, both on Redis, both ' +
        'keyed by the client IP (one caller), both setting their default rate-limit headers.',
      '',
      "App CPU: the app process's `process.cpuUsage()` (all threads) over a run, per request. " +
        "Over no limiter: per round, the app's CPU per request minus the same platform's " +
        "no-limiter app's in that round; median over rounds [95 % percentile-bootstrap interval]. " +
        "× no limiter: req/s over the no-limiter app's in the same round, likewise. Redis CPU: " +
        "the server's `INFO cpu` per request. p50/p99: autocannon's, closed loop (each connection " +
        'waits for its answer), medians over rounds.',
      '',
      markdownTable(
        [
          'platform',
          'guard',
          'req/s',
          '× no limiter [95 %]',
          'app CPU µs/req',
          'over no limiter µs/req [95 %]',
          'Redis CPU µs/req',
          'p50 ms',
          'p99 ms',
        ],
        rows,
      ),
      '',
      ...(ab.length > 0
        ? [
            `## This checkout over the baseline (${o.baseline})`,
            '',
            "Per round: app CPU µs/request minus the baseline build's, and req/s over its; " +
              'median [95 % interval].',
            '',
            markdownTable(['platform', 'route', 'app CPU µs/req', 'req/s ×'], ab),
            '',
          ]
        : []),
      '## Targets (issues 13 and 28)',
      '',
      'A "≤" target is met only when the upper bound of the interval is within it, a "≥" target ' +
        'only when the lower bound is.',
      '',
      ...(notJudged ? [`**No verdicts: ${notJudged}.**`, ''] : []),
      markdownTable(['target', 'measured: median [95 % interval]', 'target', 'verdict'], targets),
    ].join('\n');
    console.log(markdown);
    if (o.write) {
      const svg = barChartSvg({
        title: 'HTTP requests per second, as a ratio to the same app without a limiter',
        subtitle:
          `Nest 11, autocannon ${o.connections} connections, median of ${o.rounds} shuffled ` +
          `rounds with 95 % interval; Node ${host.node}, Redis ${host.redis}; ${host.revision}`,
        referenceLabel: 'no limiter = 1.0 (per platform)',
        bars: apps.map((app) => {
          const e = app.variant === 'bare' ? { value: 1, low: 1, high: 1 } : speed(app);
          return { label: `${app.platform}: ${app.name}`, ...e, kind: app.kind };
        }),
      });
      const written = [
        writeResult(o.out, 'http.md', markdown),
        writeResult(o.out, 'http.svg', svg),
      ];
      process.stderr.write(`wrote ${written.join(', ')}\n`);
    }
  } finally {
    for (const app of apps) {
      if (app.child.connected) app.child.send('stop');
    }
    await Promise.all(
      apps.map(
        (app) =>
          new Promise<void>((resolve) => {
            if (app.child.exitCode !== null) return resolve();
            const timer = setTimeout(() => app.child.kill('SIGKILL'), 5_000);
            app.child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
          }),
      ),
    );
    // Ours under their prefix; ThrottlerGuard's: its hash of class, handler, throttler and IP.
    const throttlerKey = createHash('sha256')
      .update('ThrottlerController-hello-default-127.0.0.1')
      .digest('hex');
    await deleteKeys(admin, `${prefix}*`).catch(() => 0);
    await admin.unlink(`{${throttlerKey}:default}:hits`).catch(() => 0);
    admin.disconnect();
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
