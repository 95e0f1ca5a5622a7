/**
 * Fixture (adversarial review 3): RedlimitModule on a Redis URL that carries its password as a
 * query parameter (`redis://host:port/?password=…`, which ioredis reads as the password).
 */
import { Controller, Get, Module, type Type } from '@nestjs/common';
import { RedlimitModule, Throttle } from '../../../lib/nest';

export function redisUrlSecretApp(url: string): Type {
  @Controller()
  class PingController {
    @Get('ping')
    @Throttle('api')
    ping(): string {
      return 'pong';
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: url,
        prefix: 'test:review-url-secret:',
        policies: { api: { algorithm: 'fixed-window', limit: 5, window: '1m' } },
      }),
    ],
    controllers: [PingController],
  })
  class RedisUrlSecretModule {}
  return RedisUrlSecretModule;
}
