import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { APP_GUARD } from '@nestjs/core';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import {
  RedlimitBoardModule,
  RedlimitGuard,
  RedlimitModule,
  redlimitOptionsFromEnv,
} from '../lib/nest';
import { AuthController } from './auth.controller';
import { AuthService } from './auth.service';
import { CompletionsController } from './completions.controller';
import { HealthController } from './health.controller';
import { LinksController } from './links.controller';

@Module({
  imports: [
    // The limits live in sample/redlimit.env, where the `redlimit` command reads them too
    // (--dotenv); variables set in the environment win, e.g.
    // REDLIMIT_POLICIES="sign-in=fixed-window:3/1m,links=…,api=…", REDIS_URL, REDLIMIT_KEY_SECRET,
    // REDLIMIT_SAMPLE_ADMIN_TOKEN (turns POST /auth/unlock on), REDLIMIT_DEVICES_SECRET.
    ConfigModule.forRoot({ envFilePath: join(__dirname, 'redlimit.env') }),
    // Redis from REDIS_URL (else the in-memory store, with a warning).
    RedlimitModule.forRootAsync({
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService) => {
        // The API keys the sample knows. A key it does not know is charged by client IP: an
        // unvalidated key is a budget of the caller's choosing (a fresh key per request, a fresh
        // budget each time).
        const apiKeys = new Set(
          (config.get<string>('REDLIMIT_SAMPLE_API_KEYS') ?? '')
            .split(',')
            .map((key) => key.trim())
            .filter(Boolean),
        );
        const options = redlimitOptionsFromEnv(config, {
          headers: 'ietf',
          apiKey: { validate: (key) => apiKeys.has(key) },
        });
        // Trusted devices for POST /auth/sign-in: tokens are signed with REDLIMIT_DEVICES_SECRET,
        // else REDLIMIT_KEY_SECRET; with neither, with a secret made for this process (tokens
        // then stop working when it restarts, and each instance has its own).
        const secret =
          options.devices?.secret ?? options.keySecret ?? randomBytes(32).toString('base64url');
        return { ...options, devices: { ...options.devices, secret } };
      },
    }),
    // The ops board at /ops/limits, for browsers on this machine only (the TCP peer, not a
    // header: a proxy in front would make every visitor look local). A real app authorises its
    // operators here (a session, a guard) and names them in `actor` for the audit.
    RedlimitBoardModule.forRoot({
      path: '/ops/limits',
      authorize: (request) => isLoopback(peerAddress(request)),
      actor: () => 'local operator',
    }),
  ],
  controllers: [AuthController, LinksController, CompletionsController, HealthController],
  providers: [AuthService, { provide: APP_GUARD, useClass: RedlimitGuard }],
})
export class AppModule {}

/** The TCP peer of an Express or Fastify request. */
function peerAddress(request: unknown): string | undefined {
  const req = request as {
    socket?: { remoteAddress?: string };
    raw?: { socket?: { remoteAddress?: string } };
  };
  return req.socket?.remoteAddress ?? req.raw?.socket?.remoteAddress;
}

function isLoopback(address: string | undefined): boolean {
  return address === '::1' || /^(::ffff:)?127\./.test(address ?? '');
}
