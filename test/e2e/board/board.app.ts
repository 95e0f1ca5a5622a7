/** Fixture: an app with a login route under @Attempt, a throttled route, and the ops board. */
import { Body, Controller, Get, Module, Post, type Type, UseGuards } from '@nestjs/common';
import {
  Attempt,
  type RedlimitBoardOptions,
  RedlimitBoardModule,
  RedlimitGuard,
  RedlimitModule,
  type Store,
  Throttle,
} from '../../../lib/nest';

@Controller()
class LoginController {
  /** Wrong password unless it is 'right': the failure costs, a success is refunded. */
  @Post('login')
  login(
    @Body() body: { email?: string; password?: string },
    @Attempt(['email'], { policy: 'login' }) attempt: Attempt,
  ): { ok: boolean } {
    if (body.password === 'right') {
      attempt.refund();
      return { ok: true };
    }
    return { ok: false };
  }

  @Get('search')
  @UseGuards(RedlimitGuard)
  @Throttle('search')
  search(): string {
    return 'results';
  }

  @Get('preview')
  @UseGuards(RedlimitGuard)
  @Throttle('preview')
  preview(): string {
    return 'preview';
  }
}

/** The header the fixture's `authorize` wants, and the operator it names. */
export const OPS_HEADER = 'x-ops-token';
export const OPS_TOKEN = 'let-me-in';

/** The fixture app with the board at /ops/limits. */
export function boardApp(store: Store, board: Partial<RedlimitBoardOptions> = {}): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        store,
        keySecret: 'a-key-secret-of-the-test-app',
        policies: {
          login: {
            algorithm: 'fixed-window',
            limit: 3,
            window: '15m',
            block: { duration: '10m', factor: 2 },
          },
          search: { algorithm: 'sliding-window', limit: 2, window: '1m' },
          preview: { algorithm: 'fixed-window', limit: 1, window: '1m', shadow: true },
        },
      }),
      RedlimitBoardModule.forRoot({
        path: '/ops/limits',
        authorize: (req) =>
          (req as { headers: Record<string, string | undefined> }).headers[OPS_HEADER] ===
          OPS_TOKEN,
        actor: (req) =>
          (req as { headers: Record<string, string | undefined> }).headers['x-ops-user'],
        flushMs: 100,
        ...board,
      }),
    ],
    controllers: [LoginController],
  })
  class BoardAppModule {}
  return BoardAppModule;
}
