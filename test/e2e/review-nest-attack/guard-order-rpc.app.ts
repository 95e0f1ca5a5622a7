/**
 * Fixture (adversarial review 3): a hybrid app's controller with microservice handlers
 * (`@MessagePattern`) beside an HTTP route, each with a credential guard bound before redlimit
 * charges: on an @Attempt handler (the guard runs before the spend) and before RedlimitGuard
 * under @Throttle. The guard-order check warns for the HTTP route only.
 */
import {
  type CanActivate,
  Controller,
  Injectable,
  Module,
  Post,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';
import { Attempt, MemoryStore, RedlimitGuard, RedlimitModule, Throttle } from '../../../lib/nest';

/** Stands for a credential check (Passport's LocalAuthGuard, a JWT guard). */
@Injectable()
export class CredentialsGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

@Controller('accounts')
class AccountsController {
  /** The control: the same handler over HTTP is warned about. */
  @Post('sign-in')
  @UseGuards(CredentialsGuard)
  httpSignIn(@Attempt(['ip'], { policy: 'login' }) _attempt: Attempt): string {
    return 'ok';
  }

  @MessagePattern('sign-in')
  @UseGuards(CredentialsGuard)
  rpcSignIn(@Attempt(['ip'], { policy: 'login' }) _attempt: Attempt): string {
    return 'ok';
  }

  @MessagePattern('lookup')
  @UseGuards(CredentialsGuard, RedlimitGuard)
  @Throttle('login')
  rpcLookup(): string {
    return 'ok';
  }
}

export function guardOrderRpcApp(): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        store: new MemoryStore(),
        policies: { login: { algorithm: 'fixed-window', limit: 5, window: '15m' } },
      }),
    ],
    controllers: [AccountsController],
  })
  class GuardOrderRpcModule {}
  return GuardOrderRpcModule;
}
