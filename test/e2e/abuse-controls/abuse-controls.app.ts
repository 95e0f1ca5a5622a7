/** Fixture: lockouts, shadow mode and the refusal cache through the module, on a real Redis. */
import { Controller, Get, HttpCode, Module, Post, type Type, UseGuards } from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  Attempt,
  type DecisionEvent,
  RedlimitGuard,
  RedlimitModule,
  type RedlimitModuleOptions,
  Throttle,
} from '../../../lib/nest';

/**
 * The policies of every abuse-controls fixture (HTTP, GraphQL, WebSocket, RPC): `login` locks a
 * caller out for 5 min after its 2 per minute, `canary` and `otp` allow 1 per minute in shadow.
 */
export const ABUSE_POLICIES = {
  login: {
    algorithm: 'fixed-window',
    limit: 2,
    window: '1m',
    block: { duration: '5m', factor: 2 },
  },
  canary: { algorithm: 'fixed-window', limit: 1, window: '1m', shadow: true },
  otp: { algorithm: 'fixed-window', limit: 1, window: '1m', shadow: true },
} satisfies RedlimitModuleOptions['policies'];

export function abuseControlsApp(
  client: Redis,
  prefix: string,
  events: DecisionEvent[],
  extra: RedlimitModuleOptions = {},
): Type {
  @Controller()
  @UseGuards(RedlimitGuard)
  class AbuseController {
    @Get('login')
    @Throttle('login')
    login(): string {
      return 'ok';
    }

    @Get('canary')
    @Throttle('canary')
    canary(): string {
      return 'ok';
    }

    @Post('otp')
    @HttpCode(200)
    otp(@Attempt('ip', { policy: 'otp' }) attempt: Attempt): { shadowRefused: boolean } {
      return { shadowRefused: attempt.decision.shadowRefused === true };
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        refusalCache: true,
        policies: ABUSE_POLICIES,
        onDecision: (event) => events.push(event),
        ...extra,
      }),
    ],
    controllers: [AbuseController],
  })
  class AbuseControlsModule {}
  return AbuseControlsModule;
}
