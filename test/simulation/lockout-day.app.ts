/**
 * Fixture of the lockout-day simulation: the sample's sign-in (`['ip', 'body.email']`, a right
 * password refunded) with trusted devices on the account part, on a MemoryStore driven by the
 * simulation's clock, behind a proxy on the loopback (the client is named by X-Forwarded-For).
 */
import {
  Body,
  Controller,
  HttpCode,
  Module,
  Post,
  type Type,
  UnauthorizedException,
} from '@nestjs/common';
import { Attempt, MemoryStore, type PolicyDefinition, RedlimitModule } from '../../lib/nest';

export const OWNER = { email: 'ada@example.com', password: 'correct horse battery staple' };

export function lockoutDayApp(policy: PolicyDefinition, clock: () => number): Type {
  @Controller('auth')
  class AuthController {
    @Post('sign-in')
    @HttpCode(200)
    signIn(
      @Body() body: { email?: string; password?: string },
      @Attempt(['ip', 'body.email'], { policy: 'sign-in', devices: 'body.email' })
      attempt: Attempt,
    ): { user: string } {
      const user = String(body?.email ?? '')
        .trim()
        .toLowerCase();
      if (user !== OWNER.email || body?.password !== OWNER.password) {
        throw new UnauthorizedException('Wrong email or password');
      }
      attempt.refund();
      return { user };
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        store: new MemoryStore({ clock }),
        keySecret: 'lockout-day simulation secret',
        clientIp: { trustedProxies: ['loopback'] },
        headers: 'ietf',
        policies: { 'sign-in': policy },
        devices: {}, // the defaults: a 30-day token, maxFailures 10 × the policy's limit
      }),
    ],
    controllers: [AuthController],
  })
  class LockoutDayModule {}
  return LockoutDayModule;
}
