/** Fixture: apps with and without identity hashing (@Attempt, API-key layers), with and without keySecret. */
import { Controller, Get, Module, Post, type Type, UseGuards } from '@nestjs/common';
import {
  Attempt,
  MemoryStore,
  RedlimitGuard,
  RedlimitModule,
  type RedlimitModuleOptions,
  Throttle,
} from '../../../lib/nest';

@Controller()
class AttemptController {
  @Post('sign-in')
  signIn(@Attempt(['ip', 'body.email'], { policy: 'login' }) _attempt: Attempt): string {
    return 'ok';
  }
}

@Controller()
@UseGuards(RedlimitGuard)
@Throttle('login', { by: 'apiKey' })
class ApiKeyController {
  @Get('export')
  export(): string {
    return 'ok';
  }
}

@Controller()
@UseGuards(RedlimitGuard)
class IpOnlyController {
  @Get('items')
  @Throttle('login')
  items(): string {
    return 'ok';
  }
}

export const CONTROLLERS = {
  attempt: AttemptController,
  apiKey: ApiKeyController,
  ipOnly: IpOnlyController,
} as const;

export function keySecretApp(
  controller: keyof typeof CONTROLLERS,
  options: Partial<RedlimitModuleOptions> = {},
): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        store: new MemoryStore(),
        policies: { login: { algorithm: 'fixed-window', limit: 5, window: '15m' } },
        ...options,
      }),
    ],
    controllers: [CONTROLLERS[controller]],
  })
  class KeySecretAppModule {}
  return KeySecretAppModule;
}
