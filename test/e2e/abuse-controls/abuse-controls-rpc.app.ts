/**
 * Fixture: lockouts and shadow mode on microservice handlers (TCP transport), on a real Redis.
 * Booted with startMicroservice from test/e2e/rpc (the peer is 127.0.0.1).
 */
import { Controller, Module, type Type, UseGuards } from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import {
  Attempt,
  type DecisionEvent,
  RedlimitGuard,
  RedlimitModule,
  Throttle,
} from '../../../lib/nest';
import { ABUSE_POLICIES } from './abuse-controls.app';

/** What the handlers and the module's events saw. */
export class RpcSeen {
  handled = 0;
  readonly events: DecisionEvent[] = [];
}

export function abuseControlsRpcApp(client: Redis, prefix: string, seen: RpcSeen): Type {
  @Controller()
  @UseGuards(RedlimitGuard)
  class AbuseController {
    @MessagePattern('login')
    @Throttle('login')
    login(): string {
      seen.handled++;
      return 'ok';
    }

    @MessagePattern('canary')
    @Throttle('canary')
    canary(): string {
      seen.handled++;
      return 'ok';
    }

    /** Answers whether the attempt it was handed is a shadow refusal. */
    @MessagePattern('otp')
    otp(@Attempt('ip', { policy: 'otp' }) attempt: Attempt): { shadowRefused: boolean } {
      seen.handled++;
      return { shadowRefused: attempt.decision.shadowRefused === true };
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        policies: ABUSE_POLICIES,
        onDecision: (event) => seen.events.push(event),
      }),
    ],
    controllers: [AbuseController],
  })
  class AbuseControlsRpcModule {}
  return AbuseControlsRpcModule;
}
