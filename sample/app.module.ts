import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { APP_GUARD } from '@nestjs/core';
import { join } from 'node:path';
import { RedlimitGuard, RedlimitModule, redlimitOptionsFromEnv } from '../lib/nest';
import { AuthController } from './auth.controller';
import { AuthService } from './auth.service';
import { CompletionsController } from './completions.controller';
import { HealthController } from './health.controller';
import { LinksController } from './links.controller';

@Module({
  imports: [
    // The limits live in sample/redlimit.env, where the `redlimit` command reads them too
    // (--dotenv); variables set in the environment win, e.g.
    // REDLIMIT_POLICIES="sign-in=fixed-window:3/1m,links=…,api=…", REDIS_URL, REDLIMIT_KEY_SECRET.
    ConfigModule.forRoot({ envFilePath: join(__dirname, 'redlimit.env') }),
    // Redis from REDIS_URL (else the in-memory store, with a warning).
    RedlimitModule.forRootAsync({
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService) => redlimitOptionsFromEnv(config, { headers: 'ietf' }),
    }),
  ],
  controllers: [AuthController, LinksController, CompletionsController, HealthController],
  providers: [AuthService, { provide: APP_GUARD, useClass: RedlimitGuard }],
})
export class AppModule {}
