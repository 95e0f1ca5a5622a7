// One Nest 11 app for bench/http.ts, run in its own child process (forked with ts-node):
//   http-app.ts <express|fastify> <variant> <redis url> <redlimit key prefix> [redlimit lib dir]
// The same GET /hello in every variant: no limiter; `redlimit`: @Throttle + RedlimitGuard (fixed
// window, a limit that never refuses); `attempt`: @Attempt('ip') on the handler (the interceptor
// spends; RedlimitGuard runs and finds no layer); `default`: no decorator, the module's
// defaultPolicy with RedlimitGuard as APP_GUARD; @nestjs/throttler's ThrottlerGuard with
// @nest-lab's Redis storage; and, to tell what an app-wide interceptor alone costs, no limiter + a
// no-op APP_INTERCEPTOR (RedlimitModule registers one for @Attempt). The redlimit variants load
// redlimit/nest from the lib dir when one is given (another checkout's `lib/nest`, for an A/B run).
// Listens on a free port, reports it to the parent over IPC, and answers { cpu } on request.
import 'reflect-metadata';
import {
  type CallHandler,
  Controller,
  Get,
  Injectable,
  Module,
  type NestInterceptor,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR, NestFactory } from '@nestjs/core';
import type { Observable } from 'rxjs';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { resolve } from 'node:path';

export type Platform = 'express' | 'fastify';
export type Variant = 'bare' | 'interceptor' | 'redlimit' | 'attempt' | 'default' | 'throttler';

/** Messages from the app to the parent. */
export type AppMessage = { port: number } | { cpuUs: number } | { profiled: string };

/**
 * Messages from the parent: `'cpu'`, `'stop'`, and (bench/http-profile.ts) `'profile'` to start
 * the V8 CPU profiler, `{ profileTo }` to stop it and write the profile there.
 */
export type ParentMessage = 'cpu' | 'stop' | 'profile' | { profileTo: string };

const HOUR_MS = 3_600_000;
const NEVER_REFUSES = 1_000_000_000;

@Controller()
class BareController {
  @Get('hello')
  hello(): { hello: string } {
    return { hello: 'world' };
  }
}

/** Passes every call through: what Nest's interceptor machinery costs, and nothing else. */
@Injectable()
class PassThroughInterceptor implements NestInterceptor {
  intercept(_context: unknown, next: CallHandler): Observable<unknown> {
    return next.handle();
  }
}

@Controller()
@UseGuards(ThrottlerGuard)
class ThrottlerController {
  @Get('hello')
  hello(): { hello: string } {
    return { hello: 'world' };
  }
}

/** The redlimit variants' controllers and module, built on one copy of redlimit/nest. */
function redlimitApp(
  variant: 'redlimit' | 'attempt' | 'default',
  url: string,
  prefix: string,
  libDir?: string,
) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- chosen at run time (A/B)
  const lib = require(libDir ? resolve(libDir) : '../lib/nest') as typeof import('../lib/nest');

  @Controller()
  @UseGuards(lib.RedlimitGuard)
  @lib.Throttle('bench')
  class ThrottleController {
    @Get('hello')
    hello(): { hello: string } {
      return { hello: 'world' };
    }
  }

  @Controller()
  @UseGuards(lib.RedlimitGuard)
  class AttemptController {
    @Get('hello')
    hello(@lib.Attempt('ip', { policy: 'bench' }) _attempt: unknown): { hello: string } {
      return { hello: 'world' };
    }
  }

  const policies = {
    bench: { algorithm: 'fixed-window' as const, limit: NEVER_REFUSES, window: '1h' },
  };
  return {
    imports: [
      lib.RedlimitModule.forRoot({
        redis: url,
        prefix,
        policies,
        ...(variant === 'default' && { defaultPolicy: 'bench' }),
      }),
    ],
    controllers: [
      { redlimit: ThrottleController, attempt: AttemptController, default: BareController }[
        variant
      ],
    ],
    providers: variant === 'default' ? [{ provide: APP_GUARD, useClass: lib.RedlimitGuard }] : [],
  };
}

function appModule(variant: Variant, url: string, prefix: string, libDir?: string): Type {
  let metadata;
  if (variant === 'redlimit' || variant === 'attempt' || variant === 'default') {
    metadata = redlimitApp(variant, url, prefix, libDir);
  } else if (variant === 'throttler') {
    metadata = {
      imports: [
        ThrottlerModule.forRoot({
          throttlers: [{ ttl: HOUR_MS, limit: NEVER_REFUSES }],
          storage: new ThrottlerStorageRedisService(url),
        }),
      ],
      controllers: [ThrottlerController],
    };
  } else {
    metadata = {
      controllers: [BareController],
      providers:
        variant === 'interceptor'
          ? [{ provide: APP_INTERCEPTOR, useClass: PassThroughInterceptor }]
          : [],
    };
  }
  @Module(metadata)
  class BenchAppModule {}
  return BenchAppModule;
}

async function main(): Promise<void> {
  const [platform, variant, url, prefix, libDir] = process.argv.slice(2) as [
    Platform,
    Variant,
    string,
    string,
    string | undefined,
  ];
  const module = appModule(variant, url, prefix, libDir);
  const app =
    platform === 'fastify'
      ? await NestFactory.create(module, new FastifyAdapter(), { logger: false })
      : await NestFactory.create(module, { logger: false });
  await app.listen(0, '127.0.0.1');
  const server = app.getHttpServer() as import('node:net').Server;
  const address = server.address() as import('node:net').AddressInfo;
  const send = (message: AppMessage) => process.send?.(message);
  let profiler: import('node:inspector').Session | undefined;
  process.on('message', (message: ParentMessage) => {
    if (message === 'profile') {
      profiler = new Session();
      profiler.connect();
      profiler.post('Profiler.enable', () => profiler!.post('Profiler.start'));
    } else if (typeof message === 'object' && profiler) {
      profiler.post('Profiler.stop', (error, result) => {
        if (!error) writeFileSync(message.profileTo, JSON.stringify(result.profile));
        send({ profiled: error ? String(error) : message.profileTo });
      });
    } else if (message === 'cpu') {
      const { user, system } = process.cpuUsage();
      send({ cpuUs: user + system });
    } else if (message === 'stop') {
      void app.close().finally(() => process.exit(0));
    }
  });
  process.on('disconnect', () => process.exit(0)); // the parent is gone
  send({ port: address.port });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
