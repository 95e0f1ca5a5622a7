/** Fixture: a throttled route and an @Attempt route keyed on the client IP. */
import { Controller, Get, HttpCode, Module, Post, type Type, UseGuards } from '@nestjs/common';
import {
  Attempt,
  type ClientIpOptions,
  MemoryStore,
  RedlimitGuard,
  RedlimitModule,
  Throttle,
} from '../../../lib/nest';

@Controller()
@UseGuards(RedlimitGuard)
class IpController {
  @Get('throttled')
  @Throttle('two')
  throttled(): string {
    return 'ok';
  }

  @Post('attempt')
  @HttpCode(200)
  attempt(@Attempt('ip', { policy: 'two' }) _attempt: Attempt): string {
    return 'ok';
  }
}

export function clientIpApp(clientIp?: ClientIpOptions): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        store: new MemoryStore(),
        policies: { two: { algorithm: 'sliding-window', limit: 2, window: '1m' } },
        ...(clientIp && { clientIp }),
      }),
    ],
    controllers: [IpController],
  })
  class ClientIpAppModule {}
  return ClientIpAppModule;
}
