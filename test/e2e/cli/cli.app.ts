/**
 * Fixture: a sign-in route with @Attempt (and one with trusted devices) and a route with
 * @Throttle, configured from the same environment variables the `redlimit` command reads.
 */
import {
  Body,
  Controller,
  Get,
  HttpCode,
  Module,
  Post,
  type Type,
  UnauthorizedException,
  UseGuards,
} from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import {
  Attempt,
  RedlimitGuard,
  RedlimitModule,
  redlimitOptionsFromEnv,
  Throttle,
} from '../../../lib/nest';

export const PASSWORD = 'correct horse battery staple';

@Controller()
class CliAppController {
  @Post('sign-in')
  @HttpCode(200)
  signIn(
    @Body() body: { email?: string; password?: string },
    @Attempt(['ip', 'email'], { policy: 'login' }) attempt: Attempt,
  ): { ok: true } {
    if (body.password !== PASSWORD) throw new UnauthorizedException();
    attempt.refund();
    return { ok: true };
  }

  /** The same sign-in, with trusted devices on the email (`REDLIMIT_DEVICES_TTL` turns them on). */
  @Post('trusted-sign-in')
  @HttpCode(200)
  trustedSignIn(
    @Body() body: { email?: string; password?: string },
    @Attempt(['ip', 'email'], { policy: 'login', devices: 'email' }) attempt: Attempt,
  ): { ok: true } {
    if (body.password !== PASSWORD) throw new UnauthorizedException();
    attempt.refund();
    return { ok: true };
  }

  @Get('links/:id')
  @UseGuards(RedlimitGuard)
  @Throttle('links')
  link(): { ok: true } {
    return { ok: true };
  }
}

/** `env` stands in for process.env (ConfigModule `load`); the CLI gets the same variables. */
export function cliApp(env: Record<string, string>): Type {
  @Module({
    imports: [
      ConfigModule.forRoot({ ignoreEnvFile: true, load: [() => env] }),
      RedlimitModule.forRootAsync({
        imports: [ConfigModule],
        inject: [ConfigService],
        useFactory: (config: ConfigService) => redlimitOptionsFromEnv(config),
      }),
    ],
    controllers: [CliAppController],
  })
  class CliAppModule {}
  return CliAppModule;
}
