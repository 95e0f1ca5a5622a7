/** Fixture: a one-route app on whatever connection the spec passes. */
import { Controller, Get, Module, type Type, UseGuards } from '@nestjs/common';
import {
  RedlimitGuard,
  RedlimitModule,
  type RedlimitModuleOptions,
  Throttle,
} from '../../../lib/nest';

@Controller()
@UseGuards(RedlimitGuard)
class PingController {
  @Get('ping')
  @Throttle('ping')
  ping(): string {
    return 'pong';
  }

  /** An inline policy, registered on first use. */
  @Get('inline')
  @Throttle({ name: 'inline', algorithm: 'sliding-window', limit: 1, window: '1m' })
  inline(): string {
    return 'inline';
  }
}

export function lifecycleApp(options: Omit<RedlimitModuleOptions, 'policies'>): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        ...options,
        policies: { ping: { algorithm: 'sliding-window', limit: 2, window: '1m' } },
      }),
    ],
    controllers: [PingController],
  })
  class LifecycleAppModule {}
  return LifecycleAppModule;
}
