/**
 * Fixture (adversarial review 3): `@Attempt` refundOn 'success' on a handler that answers
 * through `@Res()` after it returned (callback style, as passport.authenticate(...)(req, res)
 * or a service callback answers): the 401 leaves the app after the handler settled.
 */
import { Body, Controller, HttpCode, Module, Post, Res, type Type } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Attempt, RedlimitModule } from '../../../lib/nest';

export const CODE = '424242';

/** Express's response and Fastify's reply: both chain status()/code() and send(). */
interface LateResponse {
  status?(code: number): LateResponse;
  code?(code: number): LateResponse;
  send(body: unknown): unknown;
}

function answer(res: LateResponse, status: number, body: unknown): void {
  const withStatus = typeof res.code === 'function' ? res.code(status) : res.status!(status);
  withStatus.send(body);
}

export function reviewAttackApp(client: Redis, prefix: string): Type {
  @Controller('otp')
  class OtpController {
    /** A wrong code answers 401 on the next turn of the event loop, after the handler returned. */
    @Post('late')
    @HttpCode(200)
    late(
      @Body() body: { phone?: string; code?: string },
      @Res() res: LateResponse,
      @Attempt('body.phone', { policy: 'otp', refundOn: 'success' }) _attempt: Attempt,
    ): void {
      const ok = body.code === CODE;
      setImmediate(() => answer(res, ok ? 200 : 401, { ok }));
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        policies: { otp: { algorithm: 'fixed-window', limit: 3, window: '15m' } },
      }),
    ],
    controllers: [OtpController],
  })
  class ReviewAttackAppModule {}
  return ReviewAttackAppModule;
}
