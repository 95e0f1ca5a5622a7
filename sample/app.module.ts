import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { APP_GUARD } from '@nestjs/core';
import { RedlimitGuard, RedlimitModule, redlimitOptionsFromEnv } from '../lib/nest';
import { AuthController } from './auth.controller';
import { AuthService } from './auth.service';
import { HealthController } from './health.controller';
import { LinksController } from './links.controller';

@Module({
  imports: [
    ConfigModule.forRoot(),
    // Redis from REDIS_URL (else the in-memory store, with a warning); every REDLIMIT_* variable
    // overrides the defaults below, e.g. REDLIMIT_POLICIES="sign-in=fixed-window:3/1m".
    RedlimitModule.forRootAsync({
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService) =>
        redlimitOptionsFromEnv(config, {
          prefix: 'sample:',
          policies: {
            'sign-in': { algorithm: 'fixed-window', limit: 5, window: '15m' },
            links: { algorithm: 'sliding-window', limit: 10, window: '1m' },
            api: { algorithm: 'sliding-window', limit: 100, window: '1m', failMode: 'open' },
          },
          defaultPolicy: 'api',
          headers: 'ietf',
        }),
    }),
  ],
  controllers: [AuthController, LinksController, HealthController],
  providers: [AuthService, { provide: APP_GUARD, useClass: RedlimitGuard }],
})
export class AppModule {}
