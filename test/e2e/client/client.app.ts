/** Fixture: one endpoint limited to 2 calls per 1 s fixed window, for the retrying clients. */
import { Controller, Get, Module, type Type, UseGuards } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { RedlimitGuard, RedlimitModule, Throttle } from '../../../lib/nest';

@Controller('quotes')
@UseGuards(RedlimitGuard)
class QuotesController {
  @Get()
  @Throttle('pair')
  list(): { quotes: string[] } {
    return { quotes: ['a', 'b'] };
  }
}

export function clientApp(client: Redis, prefix: string): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        policies: { pair: { algorithm: 'fixed-window', limit: 2, window: '1s' } },
      }),
    ],
    controllers: [QuotesController],
  })
  class ClientAppModule {}
  return ClientAppModule;
}
