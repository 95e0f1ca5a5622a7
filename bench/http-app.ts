// One Nest 11 app for bench/http.ts, run in its own child process (forked with ts-node):
//   http-app.ts <express|fastify> <bare|redlimit|throttler> <redis url> <redlimit key prefix>
// The same GET /hello in every variant: no limiter; @Throttle + RedlimitGuard (fixed window, a
// limit that never refuses); @nestjs/throttler's ThrottlerGuard with @nest-lab's Redis storage;
// and, to tell what an app-wide interceptor alone costs, no limiter + a no-op APP_INTERCEPTOR
// (RedlimitModule registers one for @Attempt).
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
import { APP_INTERCEPTOR, NestFactory } from '@nestjs/core';
import type { Observable } from 'rxjs';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { RedlimitGuard, RedlimitModule, Throttle } from '../lib/nest';

export type Platform = 'express' | 'fastify';
export type Variant = 'bare' | 'interceptor' | 'redlimit' | 'throttler';

/** Messages from the app to the parent. */
export type AppMessage = { port: number } | { cpuUs: number };

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
@UseGuards(RedlimitGuard)
@Throttle('bench')
class RedlimitController {
  @Get('hello')
  hello(): { hello: string } {
    return { hello: 'world' };
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

function appModule(variant: Variant, url: string, prefix: string): Type {
  const imports = {
    bare: [],
    interceptor: [],
    redlimit: [
      RedlimitModule.forRoot({
        redis: url,
        prefix,
        policies: { bench: { algorithm: 'fixed-window', limit: NEVER_REFUSES, window: '1h' } },
      }),
    ],
    throttler: [
      ThrottlerModule.forRoot({
        throttlers: [{ ttl: HOUR_MS, limit: NEVER_REFUSES }],
        storage: new ThrottlerStorageRedisService(url),
      }),
    ],
  }[variant];
  const controller = {
    bare: BareController,
    interceptor: BareController,
    redlimit: RedlimitController,
    throttler: ThrottlerController,
  }[variant];
  const providers =
    variant === 'interceptor'
      ? [{ provide: APP_INTERCEPTOR, useClass: PassThroughInterceptor }]
      : [];
  @Module({ imports, controllers: [controller], providers })
  class BenchAppModule {}
  return BenchAppModule;
}

async function main(): Promise<void> {
  const [platform, variant, url, prefix] = process.argv.slice(2) as [
    Platform,
    Variant,
    string,
    string,
  ];
  const module = appModule(variant, url, prefix);
  const app =
    platform === 'fastify'
      ? await NestFactory.create(module, new FastifyAdapter(), { logger: false })
      : await NestFactory.create(module, { logger: false });
  await app.listen(0, '127.0.0.1');
  const server = app.getHttpServer() as import('node:net').Server;
  const address = server.address() as import('node:net').AddressInfo;
  const send = (message: AppMessage) => process.send?.(message);
  process.on('message', (message: unknown) => {
    if (message === 'cpu') {
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
