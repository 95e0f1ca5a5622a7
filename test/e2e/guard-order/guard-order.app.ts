/** Fixture: routes with @Throttle / @Attempt and guards bound before and after RedlimitGuard. */
import {
  type CanActivate,
  Controller,
  Get,
  Injectable,
  Module,
  Post,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { Attempt, MemoryStore, RedlimitGuard, RedlimitModule, Throttle } from '../../../lib/nest';

/** Stands for a credential check (Passport's LocalAuthGuard, a JWT guard). */
@Injectable()
export class CredentialsGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

@Controller('before')
@UseGuards(CredentialsGuard, RedlimitGuard)
class AuthBeforeThrottleController {
  @Post('login')
  @Throttle('login')
  login(): string {
    return 'ok';
  }
}

@Controller('class-auth')
@UseGuards(CredentialsGuard)
class ClassAuthMethodThrottleController {
  @Post('login')
  @UseGuards(RedlimitGuard)
  @Throttle('login')
  login(): string {
    return 'ok';
  }
}

@Controller('after')
@UseGuards(RedlimitGuard, CredentialsGuard)
class ThrottleBeforeAuthController {
  @Post('login')
  @Throttle('login')
  login(): string {
    return 'ok';
  }

  @Get('open')
  open(): string {
    return 'ok';
  }
}

@Controller('attempt-guarded')
class AttemptGuardedController {
  @Post('login')
  @UseGuards(CredentialsGuard)
  login(@Attempt(['ip'], { policy: 'login' }) _attempt: Attempt): string {
    return 'ok';
  }
}

@Controller('attempt-plain')
class AttemptPlainController {
  @Post('login')
  login(@Attempt(['ip'], { policy: 'login' }) _attempt: Attempt): string {
    return 'ok';
  }
}

@Controller('unthrottled')
@UseGuards(CredentialsGuard, RedlimitGuard)
class UnthrottledController {
  @Get('items')
  items(): string {
    return 'ok';
  }
}

export const CONTROLLERS = {
  authBeforeThrottle: AuthBeforeThrottleController,
  classAuthMethodThrottle: ClassAuthMethodThrottleController,
  throttleBeforeAuth: ThrottleBeforeAuthController,
  attemptGuarded: AttemptGuardedController,
  attemptPlain: AttemptPlainController,
  unthrottled: UnthrottledController,
} as const;

/**
 * An app with the given controllers; `globalGuards` lists APP_GUARD providers in registration
 * order ('auth' is {@link CredentialsGuard}, 'redlimit' is {@link RedlimitGuard}).
 */
export function guardOrderApp(
  controllers: ReadonlyArray<keyof typeof CONTROLLERS>,
  globalGuards: ReadonlyArray<'auth' | 'redlimit'> = [],
): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        store: new MemoryStore(),
        policies: { login: { algorithm: 'fixed-window', limit: 5, window: '15m' } },
      }),
    ],
    controllers: controllers.map((name) => CONTROLLERS[name]),
    providers: globalGuards.map((guard) => ({
      provide: APP_GUARD,
      useClass: guard === 'auth' ? CredentialsGuard : RedlimitGuard,
    })),
  })
  class GuardOrderAppModule {}
  return GuardOrderAppModule;
}
