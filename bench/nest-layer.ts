// What redlimit's Nest layer itself costs per call, without HTTP, Redis or Nest's router: the
// guard's `canActivate` on a `@Throttle` route and on a defaultPolicy-only route, and the
// `@Attempt` interceptor's `intercept` (its handler an `of(…)`, the Observable run to its end), on
// a MemoryStore, called in a loop with hand-built HTTP execution contexts (a fresh request object
// per call, as a server would give). With `--baseline DIR`, the same on DIR/lib/nest in the same
// process, alternating rounds: an A/B of two builds with the noise of the machine on both alike.
//
//   npx ts-node --transpile-only bench/nest-layer.ts [--baseline DIR] [--rounds 12] [--calls 20000]
//
// CPU µs per call (`process.cpuUsage()` over a round), median over rounds [95 % bootstrap interval],
// and this build over the baseline per round. The store's own CPU is inside both (MemoryStore).
import 'reflect-metadata';
import { Controller, Get, Module, UseGuards } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { lastValueFrom, of } from 'rxjs';
import { bootstrapMedian, seededRandom, withInterval } from './support/stats.util';

type Lib = typeof import('../lib/nest');
type Route = 'throttle' | 'attempt' | 'default';

interface Build {
  readonly name: string;
  readonly run: Record<Route, () => Promise<void>>;
  close(): Promise<void>;
}

const NEVER_REFUSES = 1_000_000_000;

async function build(name: string, libDir?: string): Promise<Build> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- chosen at run time (A/B)
  const lib = require(libDir ? resolve(libDir) : '../lib/nest') as Lib;

  @Controller()
  @UseGuards(lib.RedlimitGuard)
  class BenchController {
    @Get('throttled')
    @lib.Throttle('bench')
    throttled(): string {
      return 'ok';
    }

    @Get('attempt')
    attempt(@lib.Attempt('ip', { policy: 'bench' }) _attempt: unknown): string {
      return 'ok';
    }

    @Get('plain')
    plain(): string {
      return 'ok';
    }
  }

  const policies = {
    bench: { algorithm: 'fixed-window' as const, limit: NEVER_REFUSES, window: '1h' },
  };
  const make = (defaultPolicy?: string) => {
    @Module({
      imports: [
        lib.RedlimitModule.forRoot({
          store: new lib.MemoryStore(),
          policies,
          ...(defaultPolicy && { defaultPolicy }),
        }),
      ],
      controllers: [BenchController],
      providers: [lib.RedlimitGuard],
    })
    class BenchModule {}
    return NestFactory.createApplicationContext(BenchModule, { logger: false });
  };
  const app = await make();
  const withDefault = await make('bench');
  const guardOf = (a: typeof app) => a.get(lib.RedlimitGuard);
  const interceptor = app.get<import('../lib/nest').AttemptInterceptor>(
    lib.REDLIMIT_ATTEMPT_INTERCEPTOR,
    { strict: false },
  );
  const guard = guardOf(app);
  const defaultGuard = guardOf(withDefault);
  const proto = BenchController.prototype as unknown as Record<string, () => string>;
  const context = (handler: string) => {
    const request = {
      method: 'GET',
      url: `/${handler}`,
      headers: { host: '127.0.0.1' },
      socket: { remoteAddress: '127.0.0.1' },
      routeOptions: { url: `/${handler}` },
    };
    const response = { statusCode: 200, header: () => response };
    return new ExecutionContextHost(
      [request, response, () => undefined],
      BenchController,
      proto[handler],
    );
  };
  const next = { handle: () => of('ok') };
  return {
    name,
    run: {
      throttle: async () => {
        await guard.canActivate(context('throttled'));
      },
      default: async () => {
        await defaultGuard.canActivate(context('plain'));
      },
      attempt: async () => {
        const ctx = context('attempt');
        await guard.canActivate(ctx);
        await lastValueFrom(await interceptor.intercept(ctx, next));
      },
    },
    close: async () => {
      await app.close();
      await withDefault.close();
    },
  };
}

/** CPU µs per call of `calls` calls, `concurrency` at a time. */
async function round(fn: () => Promise<void>, calls: number, concurrency: number): Promise<number> {
  const start = process.cpuUsage();
  for (let done = 0; done < calls; done += concurrency) {
    const batch: Array<Promise<void>> = [];
    for (let i = 0; i < concurrency; i++) batch.push(fn());
    await Promise.all(batch);
  }
  const { user, system } = process.cpuUsage(start);
  return (user + system) / calls;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      baseline: { type: 'string', default: '' },
      rounds: { type: 'string', default: '12' },
      calls: { type: 'string', default: '20000' },
      concurrency: { type: 'string', default: '32' },
      seed: { type: 'string', default: '7' },
    },
  });
  const rounds = Number(values.rounds);
  const calls = Number(values.calls);
  const concurrency = Number(values.concurrency);
  const builds = [await build('this checkout')];
  if (values.baseline)
    builds.push(await build('baseline', resolve(values.baseline, 'lib', 'nest')));
  const routes: Route[] = ['throttle', 'attempt', 'default'];
  const samples = new Map<string, number[]>();
  for (const b of builds) for (const r of routes) await round(b.run[r], calls / 4, concurrency); // warm-up
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 === 0 ? builds : [...builds].reverse();
    for (const r of routes) {
      for (const b of order) {
        const key = `${r}|${b.name}`;
        samples.set(key, [...(samples.get(key) ?? []), await round(b.run[r], calls, concurrency)]);
      }
    }
  }
  const random = seededRandom(Number(values.seed));
  const estimate = (xs: number[]) => bootstrapMedian(xs, random, 10_000);
  console.log(
    `CPU µs per call, ${rounds} rounds of ${calls} calls (${concurrency} at a time); median [95 %]`,
  );
  for (const r of routes) {
    const line = [`${r.padEnd(8)}`];
    for (const b of builds)
      line.push(`${b.name}: ${withInterval(estimate(samples.get(`${r}|${b.name}`)!))}`);
    if (builds.length === 2) {
      const now = samples.get(`${r}|${builds[0]!.name}`)!;
      const before = samples.get(`${r}|${builds[1]!.name}`)!;
      line.push(`this − baseline: ${withInterval(estimate(now.map((x, k) => x - before[k]!)))}`);
      line.push(`ratio: ${withInterval(estimate(now.map((x, k) => x / before[k]!)))}`);
    }
    console.log(line.join('   '));
  }
  for (const b of builds) await b.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
