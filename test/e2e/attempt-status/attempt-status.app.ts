/**
 * Fixture: `@Attempt` with `refundOn` on handlers that report failure by the status code they set
 * (`@Res({ passthrough: true })`), not by throwing.
 */
import { Body, Controller, HttpCode, Module, Post, Res, type Type } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Attempt, type AttemptOutcome, RedlimitModule } from '../../../lib/nest';

export const CODE = '424242';

/** The part of Express's response and Fastify's reply the handlers use. */
interface StatusSetter {
  status(code: number): unknown;
}

export function attemptStatusApp(client: Redis, prefix: string, outcomes: AttemptOutcome[]): Type {
  @Controller('otp')
  class OtpController {
    /** A wrong code answers 401 without throwing. */
    @Post('verify')
    @HttpCode(200)
    verify(
      @Body() body: { phone?: string; code?: string },
      @Res({ passthrough: true }) res: StatusSetter,
      @Attempt('body.phone', { policy: 'otp', refundOn: 'success' }) _attempt: Attempt,
    ): { ok: boolean } {
      if (body.code === CODE) return { ok: true };
      res.status(401);
      return { ok: false };
    }

    /** 3xx is not a failure: a redirect after a right code. */
    @Post('verify-redirect')
    verifyRedirect(
      @Body() body: { phone?: string; code?: string },
      @Res({ passthrough: true }) res: StatusSetter,
      @Attempt('body.phone', { policy: 'otp', refundOn: 'success' }) _attempt: Attempt,
    ): { ok: boolean } {
      res.status(body.code === CODE ? 303 : 403);
      return { ok: body.code === CODE };
    }

    /** A refundOn function sees the status the handler set. */
    @Post('verify-fn')
    @HttpCode(201)
    verifyFn(
      @Body() body: { phone?: string; code?: string },
      @Res({ passthrough: true }) res: StatusSetter,
      @Attempt('body.phone', {
        policy: 'otp',
        refundOn: (outcome) => {
          outcomes.push(outcome);
          return outcome.ok && outcome.status === 201;
        },
      })
      _attempt: Attempt,
    ): { ok: boolean } {
      if (body.code !== CODE) res.status(422);
      return { ok: body.code === CODE };
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
  class AttemptStatusAppModule {}
  return AttemptStatusAppModule;
}
