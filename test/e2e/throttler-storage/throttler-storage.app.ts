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

    /** Both throttlers on one route: default 5 per minute, burst 2 per minute. */
    @Get('both')
    @Throttle({ burst: { limit: 2, ttl: 60_000 } })
    both(): string {
      return 'both';
    }

    /** A one-second window whose refusal blocks for two seconds. */
    @Get('blocking')
    @SkipThrottle({ burst: true })
    @Throttle({ default: { limit: 1, ttl: 1_000, blockDuration: 2_000 } })
    blocking(): string {
      return 'blocking';
    }
  }

  /**
   * A limit resolved per request that alternates between 3 and 5 (e.g. read from request data):
   * one budget per caller all the same.
   */
  let alternate = 0;
  @Controller('alternating')
  @SkipThrottle({ burst: true })
  class AlternatingController {
    @Get()
    @Throttle({ default: { limit: () => (alternate++ % 2 ? 5 : 3), ttl: 60_000 } })
    alternating(): string {
      return 'alternating';
    }

    /** A limit of 0: every request refused (as @nestjs/throttler's storage does), not a 500. */
    @Get('zero')
    @Throttle({ default: { limit: 0, ttl: 60_000 } })
    zero(): string {
      return 'zero';
    }

    /** A limit of 2.5: two requests, as `totalHits > limit` admits. */
    @Get('fraction')
    @Throttle({ default: { limit: 2.5, ttl: 60_000 } })
    fraction(): string {
      return 'fraction';
    }

    /** A limit of Infinity: every request through. */
    @Get('unlimited')
    @Throttle({ default: { limit: Infinity, ttl: 60_000 } })
    unlimited(): string {
      return 'unlimited';
    }
  }

  /** Two routes sharing one budget through a key of the caller alone. */
  @Controller('shared')
  @SkipThrottle({ default: true })
  @Throttle({
    burst: {
      limit: 3,
      ttl: 60_000,
      generateKey: (_context, tracker, name) => `shared:${name}:${tracker}`,
    },
  })
  class SharedController {
    @Get('a')
    a(): string {
      return 'a';
    }

    @Get('b')
    b(): string {
      return 'b';
    }
  }

  /** A class-wide limit, raised on one handler. */
  @Controller('limit')
  @SkipThrottle({ burst: true })
  @Throttle({ default: { limit: 2, ttl: 60_000 } })
  class LimitController {
    @Get()
    low(): string {
      return 'low';
    }

    @Get('higher')
    @Throttle({ default: { limit: 4, ttl: 60_000 } })
    higher(): string {
      return 'higher';
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
        errorMessage: (_context, detail) => `over: ${detail.totalHits} hits of ${detail.limit}`,
      }),
    ],
    controllers: [HelloController, SharedController, LimitController, AlternatingController],
    providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
  })
  class ThrottlerStorageModule {}
  return ThrottlerStorageModule;
}
