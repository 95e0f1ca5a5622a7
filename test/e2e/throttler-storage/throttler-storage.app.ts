/** Fixture: an app on @nestjs/throttler's ThrottlerModule and ThrottlerGuard, with redlimit's storage. */
import { Controller, Get, Module, type Type } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { SkipThrottle, Throttle, ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import type { Redis } from 'ioredis';
import { RedlimitThrottlerStorage } from '../../../lib/nest';

export function throttlerStorageApp(client: Redis, prefix: string): Type {
  @Controller()
  class HelloController {
    @Get('hello')
    @SkipThrottle({ burst: true })
    hello(): string {
      return 'hello';
    }

    @Get('free')
    @SkipThrottle({ default: true, burst: true })
    free(): string {
      return 'free';
    }

    @Get('burst')
    @SkipThrottle({ default: true })
    @Throttle({ burst: { limit: 2, ttl: 60_000 } })
    burst(): string {
      return 'burst';
    }
  }

  @Module({
    imports: [
      ThrottlerModule.forRoot({
        throttlers: [
          { name: 'default', ttl: 60_000, limit: 5 },
          { name: 'burst', ttl: 60_000, limit: 3 },
        ],
        storage: new RedlimitThrottlerStorage({ client, prefix }),
      }),
    ],
    controllers: [HelloController],
    providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
  })
  class ThrottlerStorageModule {}
  return ThrottlerStorageModule;
}
