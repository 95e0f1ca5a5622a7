/** Fixture: one @Throttle route and one @Attempt route on a module-created Redis client. */
import { Controller, Get, Module, Post, type Type, UseGuards } from '@nestjs/common';
import { Attempt, RedlimitGuard, RedlimitModule, Throttle } from '../../../lib/nest';

export const TIMEOUT_MS = 300;

@Controller()
@UseGuards(RedlimitGuard)
class LimitedController {
  @Get('throttled')
  @Throttle('api')
  throttled(): string {
    return 'ok';
  }

  @Post('attempt')
  attempt(@Attempt('ip', { policy: 'api' }) _attempt: Attempt): string {
    return 'ok';
  }
}

export function failModeApp(
  redisUrl: string,
  failMode: 'open' | 'closed' | 'memory',
  limit = 100,
  prefix = 'rl:',
  shadow = false,
): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: redisUrl,
        prefix,
        failMode,
        shadow,
        timeoutMs: TIMEOUT_MS,
        // Sliding: a test that straddles a window boundary on the real clock still counts every spend.
        policies: { api: { algorithm: 'sliding-window', limit, window: '1m' } },
      }),
    ],
    controllers: [LimitedController],
  })
  class FailModeAppModule {}
  return FailModeAppModule;
}
