/** Fixture: a TCP microservice behind the module's deny list or skipIf (the peer is 127.0.0.1). */
import { Controller, Module, type Type, UseGuards } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import {
  Attempt,
  type DecisionEvent,
  RedlimitGuard,
  RedlimitModule,
  type RedlimitModuleOptions,
  Throttle,
} from '../../../lib/nest';

/** What the handlers saw. */
export class RpcSeen {
  handled = 0;
  readonly events: DecisionEvent[] = [];
  readonly spent: boolean[] = [];
}

export function allowDenyRpcApp(
  client: Redis,
  prefix: string,
  seen: RpcSeen,
  lists: Pick<RedlimitModuleOptions, 'allow' | 'deny' | 'skipIf'>,
): Type {
  @Controller()
  @UseGuards(RedlimitGuard)
  class RpcController {
    @MessagePattern('ping')
    @Throttle('two')
    ping(): string {
      seen.handled++;
      return 'pong';
    }

    @MessagePattern('sign-in')
    signIn(
      @Payload() _data: { email?: string },
      @Attempt('email', { policy: 'two' }) attempt: Attempt,
    ): boolean {
      seen.handled++;
      seen.spent.push(attempt.decision.receipt.spent);
      attempt.refund();
      return true;
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        policies: { two: { algorithm: 'fixed-window', limit: 2, window: '1h' } },
        ...lists,
        onDecision: (event) => seen.events.push(event),
      }),
    ],
    controllers: [RpcController],
  })
  class AllowDenyRpcModule {}
  return AllowDenyRpcModule;
}
