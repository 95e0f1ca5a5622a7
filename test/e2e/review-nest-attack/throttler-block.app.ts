/**
 * Fixture (adversarial review 3): @nestjs/throttler with RedlimitThrottlerStorage, two routes
 * sharing one budget per caller (generateKey of the caller alone), one of them blocking for two
 * minutes once over, the other not blocking (blockDuration 0): one throttler, one ttl, one limit.
 */
import { Controller, Get, Module, type Type } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { Throttle, ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import type { Redis } from 'ioredis';
import { RedlimitThrottlerStorage } from '../../../lib/nest';

const sharedKey = (_context: unknown, tracker: string, name: string) => `shared:${name}:${tracker}`;

export function throttlerBlockApp(client: Redis, prefix: string): Type {
  @Controller('shared')
  class SharedController {
    @Get('blocking')
    @Throttle({
      default: { limit: 5, ttl: 60_000, blockDuration: 120_000, generateKey: sharedKey },
    })
    blocking(): string {
      return 'blocking';
    }

    @Get('plain')
    @Throttle({ default: { limit: 5, ttl: 60_000, blockDuration: 0, generateKey: sharedKey } })
    plain(): string {
      return 'plain';
    }
  }

  @Module({
    imports: [
      ThrottlerModule.forRoot({
        throttlers: [{ name: 'default', ttl: 60_000, limit: 5 }],
        storage: new RedlimitThrottlerStorage({ client, prefix }),
      }),
    ],
    controllers: [SharedController],
    providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
  })
  class ThrottlerBlockModule {}
  return ThrottlerBlockModule;
}
