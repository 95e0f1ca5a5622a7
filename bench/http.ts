// What a limiter costs an HTTP endpoint: autocannon against the same Nest 11 GET /hello, on
// Express and on Fastify, (a) without a limiter, (b) with @Throttle + RedlimitGuard, (c) with
// @nestjs/throttler's ThrottlerGuard on @nest-lab/throttler-storage-redis.
//
//   npm run bench:http -- [--duration 5] [--connections 32] [--rounds 5] [--warmup 3]
//     [--platforms express,fastify] [--interceptor] [--redis URL] [--out bench/results] [--no-write]
//
// Each app runs in its own child process (bench/http-app.ts), all of them started before the
// first round and idle while another is measured; autocannon runs here, in the parent. On a
// 2-core machine that keeps the load generator, the app and Redis in three processes, the same
// for every variant. Rounds rotate the order of all apps; a variant's ratio is its req/s divided
// by the same platform's no-limiter req/s in the same round, and the median over rounds is
// reported. The limit never refuses (every response is a 200: checked), so this measures the
// cost of deciding. Every request comes from 127.0.0.1: one caller key for both limiters.
import { type ChildProcess, fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import autocannon from 'autocannon';
import Redis from 'ioredis';
import type { AppMessage, Platform, Variant } from './http-app';
import { type Bar, barChartSvg } from './support/bar-chart.util';
import { parseOptions } from './support/options.util';
import { ProgressBar } from './support/progress.util';
import { benchRedis, deleteKeys, redisCost, redisVersion } from './support/redis.util';
import {
  describeMachine,
  machine,
  markdownTable,
  RESULTS_DIR,
  writeResult,
} from './support/report.util';
import { grouped, median } from './support/stats.util';

const USAGE = `npm run bench:http -- [options]
  --duration S      seconds per app per round (default 5)
  --connections N   autocannon connections (default 32)
  --rounds N        measured rounds, order rotated each round (default 5)
  --warmup S        seconds of warm-up per app before the rounds (default 3)
  --platforms LIST  express,fastify (default both)
  --interceptor     also run the no-limiter app with a no-op APP_INTERCEPTOR (what Nest's
                    interceptor machinery alone costs; RedlimitModule registers one for @Attempt)
  --redis URL       Redis to use (default: REDIS_URL, else a private redis-server)
  --out DIR         where http.md and http.svg go (default bench/results)
  --no-write        print the tables only`;

const VARIANTS: ReadonlyArray<{ variant: Variant; name: string; kind: Bar['kind'] }> = [
  { variant: 'bare', name: 'no limiter', kind: 'reference' },
  { variant: 'interceptor', name: 'no limiter + no-op APP_INTERCEPTOR', kind: 'reference' },
  { variant: 'redlimit', name: '@Throttle + RedlimitGuard', kind: 'ours' },
  { variant: 'throttler', name: 'ThrottlerGuard + throttler-storage-redis', kind: 'peer' },
];

interface App {
  readonly platform: Platform;
  readonly variant: Variant;
  readonly name: string;
  readonly kind: Bar['kind'];
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

async function startApp(
  platform: Platform,
  entry: (typeof VARIANTS)[number],
  redisUrl: string,
  prefix: string,
): Promise<App> {
  const child = fork(join(__dirname, 'http-app.ts'), [platform, entry.variant, redisUrl, prefix], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message: AppMessage) => {
      if ('port' in message) resolve(message.port);
    });
    child.once('exit', (code) => reject(new Error(`${platform} ${entry.variant} exited: ${code}`)));
  });
  return { platform, ...entry, url: `http://127.0.0.1:${port}/hello`, child };
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

async function load(app: App, seconds: number, connections: number) {
  const result = await autocannon({ url: app.url, connections, duration: seconds });
  if (result.errors || result.non2xx || result.timeouts) {
    throw new Error(
      `${app.platform} ${app.name}: ${result.errors} errors, ${result.timeouts} timeouts, ` +
        `${result.non2xx} non-2xx responses (the limiter must never refuse here)`,
    );
  }
  return result;
}

async function main(): Promise<void> {
  const options = parseOptions(
    process.argv.slice(2),
    {
      duration: 5,
      connections: 32,
      rounds: 5,
      warmup: 3,
      platforms: 'express,fastify',
      interceptor: false,
      redis: '',
      out: RESULTS_DIR,
      'no-write': false,
    },
    USAGE,
  );
  const platforms = options.platforms.split(',') as Platform[];
  if (platforms.some((p) => p !== 'express' && p !== 'fastify')) {
    throw new RangeError(`--platforms takes express and/or fastify; got ${options.platforms}`);
  }
  const redis = await benchRedis(options.redis);
  const admin = new Redis(redis.url);
  const apps: App[] = [];
  const prefix = `bench-http:${process.pid}:`;
  try {
    const host = machine(await redisVersion(admin));
    for (const platform of platforms) {
      for (const entry of VARIANTS.filter(
        (v) => options.interceptor || v.variant !== 'interceptor',
      ))
        apps.push(await startApp(platform, entry, redis.url, prefix));
    }
    const progress = new ProgressBar(apps.length * (options.rounds + 1));
    for (const app of apps) {
      progress.tick(`warm-up: ${app.platform} ${app.name}`);
      await load(app, options.warmup, options.connections);
    }
    const samples = new Map<App, Sample[]>(apps.map((app) => [app, []]));
    for (let round = 0; round < options.rounds; round++) {
      const order = apps.map((_, i) => apps[(i + round) % apps.length]!);
      for (const app of order) {
        progress.tick(`round ${round + 1}/${options.rounds}: ${app.platform} ${app.name}`);
        await admin.config('RESETSTAT');
        const redisBefore = (await redisCost(admin)).cpuSeconds;
        const cpuBefore = await appCpu(app);
        const result = await load(app, options.duration, options.connections);
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

    const bare = (platform: Platform) =>
      apps.find((a) => a.platform === platform && a.variant === 'bare')!;
    /** Median over rounds of a's value / b's value in the same round. */
    const relative = (a: App, b: App, field: keyof Sample = 'perSecond') =>
      median(samples.get(a)!.map((s, r) => s[field] / samples.get(b)![r]![field]));
    const byVariant = (platform: Platform, variant: Variant) =>
      apps.find((a) => a.platform === platform && a.variant === variant)!;
    const rows = apps.map((app) => {
      const runs = samples.get(app)!;
      const of = (field: keyof Sample) => median(runs.map((s) => s[field]));
      return [
        app.platform,
        app.name,
        grouped(of('perSecond')),
        relative(app, bare(app.platform)).toFixed(2),
        of('p50').toFixed(1),
        of('p99').toFixed(1),
        relative(app, bare(app.platform), 'p99').toFixed(2),
        of('appCpuUs').toFixed(0),
        of('redisCpuUs').toFixed(1),
      ];
    });
    const targets: string[][] = [];
    for (const platform of platforms) {
      const ours = byVariant(platform, 'redlimit');
      const vsBare = relative(ours, bare(platform));
      const vsThrottler = relative(ours, byVariant(platform, 'throttler'));
      const verdict = (measured: number, bound: number) =>
        `${measured >= bound ? 'met' : 'missed'} (${measured >= bound ? '+' : ''}${(measured - bound).toFixed(2)}×)`;
      targets.push(
        [
          `${platform}: @Throttle ≥ 0.85× no limiter`,
          `${vsBare.toFixed(2)}×`,
          verdict(vsBare, 0.85),
        ],
        [
          `${platform}: @Throttle ≥ 1.2× ThrottlerGuard + Redis`,
          `${vsThrottler.toFixed(2)}×`,
          verdict(vsThrottler, 1.2),
        ],
      );
    }
    const markdown = [
      '# What a limiter costs an endpoint (`npm run bench:http`)',
      '',
      `Measured ${new Date().toISOString().slice(0, 10)}: ${describeMachine(host)}.`,
      '',
      `autocannon, ${options.connections} connections, ${options.duration} s per app per round, ` +
        `${options.rounds} rotated rounds after ${options.warmup} s of warm-up per app. Nest 11, ` +
        'GET /hello returning a small JSON object; each app in its own child process, autocannon ' +
        'in the parent. RedlimitGuard: a fixed-window policy; ThrottlerGuard: one throttler; ' +
        'both with limits that never refuse, both on Redis, both keyed by the client IP ' +
        "(one caller), both setting their default rate-limit headers. × no limiter: the app's " +
        "req/s (or p99) divided by the same platform's no-limiter app's in the same round, median " +
        'over rounds. CPU: the app process (`process.cpuUsage`) and the Redis server (`INFO cpu`) ' +
        'per request.',
      '',
      markdownTable(
        [
          'platform',
          'guard',
          'req/s',
          '× no limiter',
          'p50 ms',
          'p99 ms',
          'p99 × no limiter',
          'app CPU µs/req',
          'Redis CPU µs/req',
        ],
        rows,
      ),
      '',
      '## Targets (issue 7)',
      '',
      markdownTable(['target', 'measured', 'verdict'], targets),
    ].join('\n');
    console.log(markdown);
    if (!options['no-write']) {
      const svg = barChartSvg({
        title: 'HTTP requests per second, as a ratio to the same app without a limiter',
        subtitle:
          `Nest 11, autocannon ${options.connections} connections, median of ${options.rounds} ` +
          `rotated rounds; Node ${host.node}, Redis ${host.redis}, ${host.cores} cores`,
        referenceLabel: 'no limiter = 1.0 (per platform)',
        bars: apps.map((app) => ({
          label: `${app.platform}: ${app.name}`,
          value: relative(app, bare(app.platform)),
          kind: app.kind,
        })),
      });
      const written = [
        writeResult(options.out, 'http.md', markdown),
        writeResult(options.out, 'http.svg', svg),
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
