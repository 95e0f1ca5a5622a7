/**
 * Fixture: an app-wide RedlimitGuard with a default policy, and an @Attempt sign-in route under
 * it, on a MemoryStore whose clock stands still at the start of an hour (exact header values).
 */
import { Controller, HttpCode, Module, Post, type Type } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import {
  Attempt,
  MemoryStore,
  type RateLimitHeaderStyle,
  RedlimitGuard,
  RedlimitModule,
} from '../../../lib/nest';

/** 2030-01-15T08:00:00Z: the start of a minute and of an hour, so windows are whole. */
export const NOW_MS = Date.UTC(2030, 0, 15, 8, 0, 0);

@Controller()
class SignInController {
  @Post('sign-in')
  @HttpCode(200)
  signIn(@Attempt(['ip', 'body.email'], { policy: 'login' }) _attempt: Attempt): { ok: true } {
    return { ok: true };
  }

  /** The attempt's policy has more room than the guard's default. */
  @Post('roomy')
  @HttpCode(200)
  roomy(@Attempt('body.email', { policy: 'roomy', headers: 'all' }) _attempt: Attempt): {
    ok: true;
  } {
    return { ok: true };
  }

  /** Opted in: the headers describe the account's budget too. */
  @Post('sign-in-all')
  @HttpCode(200)
  signInAll(
    @Attempt(['ip', 'body.email'], { policy: 'login', headers: 'all' }) _attempt: Attempt,
  ): { ok: true } {
    return { ok: true };
  }

  /** Keyed on the requester alone: its budget is the requester's own. */
  @Post('ip-only')
  @HttpCode(200)
  ipOnly(@Attempt(['ip'], { policy: 'login' }) _attempt: Attempt): { ok: true } {
    return { ok: true };
  }
}

export function attemptHeadersApp(headers: RateLimitHeaderStyle): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        store: new MemoryStore({ clock: () => NOW_MS }),
        policies: {
          api: { algorithm: 'fixed-window', limit: 5, window: '1m' },
          login: { algorithm: 'fixed-window', limit: 2, window: '1h' },
          roomy: { algorithm: 'fixed-window', limit: 10, window: '1h' },
        },
        defaultPolicy: 'api',
        headers,
      }),
    ],
    controllers: [SignInController],
    providers: [{ provide: APP_GUARD, useClass: RedlimitGuard }],
  })
  class AttemptHeadersAppModule {}
  return AttemptHeadersAppModule;
}
