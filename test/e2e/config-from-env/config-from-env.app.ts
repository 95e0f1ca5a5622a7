/** Fixture: RedlimitModule.forRootAsync with @nestjs/config's ConfigService and the env helper. */
import { Controller, Get, Module, type Type, UseGuards } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { RedlimitGuard, RedlimitModule, redlimitOptionsFromEnv, Throttle } from '../../../lib/nest';

@Controller()
@UseGuards(RedlimitGuard)
class EnvController {
  @Get('login')
  @Throttle('login')
  login(): string {
    return 'ok';
  }

  @Get('api')
  @Throttle('api')
  api(): string {
    return 'ok';
  }
}

/** `env` stands in for process.env (ConfigModule `load`), so specs never touch the real one. */
export function envApp(env: Record<string, string>): Type {
  @Module({
    imports: [
      ConfigModule.forRoot({ ignoreEnvFile: true, load: [() => env] }),
      RedlimitModule.forRootAsync({
        imports: [ConfigModule],
        inject: [ConfigService],
        useFactory: (config: ConfigService) =>
          redlimitOptionsFromEnv(config, {
            // Code defaults; REDLIMIT_POLICIES overrides them by name.
            policies: { api: { algorithm: 'fixed-window', limit: 100, window: '1m' } },
          }),
      }),
    ],
    controllers: [EnvController],
  })
  class EnvAppModule {}
  return EnvAppModule;
}
