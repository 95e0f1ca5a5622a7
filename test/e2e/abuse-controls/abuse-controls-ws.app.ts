/**
 * Fixture: lockouts and shadow mode on a WebSocket gateway (@nestjs/platform-ws), on a real Redis.
 * Booted with startWsApp and reached with WsClient from test/e2e/ws.
 */
import { Module, type Type, UseFilters, UseGuards } from '@nestjs/common';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import type { Redis } from 'ioredis';
import {
  Attempt,
  type DecisionEvent,
  RedlimitGuard,
  RedlimitModule,
  Throttle,
} from '../../../lib/nest';
import { ReplyWithExceptionFilter } from '../ws/ws.app';
import { ABUSE_POLICIES } from './abuse-controls.app';

/** What the handlers and the module's events saw. */
export class WsSeen {
  handled = 0;
  readonly events: DecisionEvent[] = [];
}

export function abuseControlsWsApp(client: Redis, prefix: string, seen: WsSeen): Type {
  @WebSocketGateway({ path: '/ws' })
  @UseFilters(new ReplyWithExceptionFilter())
  class AbuseGateway {
    @SubscribeMessage('login')
    @UseGuards(RedlimitGuard)
    @Throttle('login')
    login(@MessageBody() { id }: { id: number }) {
      seen.handled++;
      return { event: 'logged-in', data: { id } };
    }

    @SubscribeMessage('canary')
    @UseGuards(RedlimitGuard)
    @Throttle('canary')
    canary(@MessageBody() { id }: { id: number }) {
      seen.handled++;
      return { event: 'canary-ok', data: { id } };
    }

    /** Answers whether the attempt it was handed is a shadow refusal. */
    @SubscribeMessage('otp')
    otp(@MessageBody() { id }: { id: number }, @Attempt('ip', { policy: 'otp' }) attempt: Attempt) {
      seen.handled++;
      return {
        event: 'otp-sent',
        data: { id, shadowRefused: attempt.decision.shadowRefused === true },
      };
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
    providers: [AbuseGateway],
  })
  class AbuseControlsWsModule {}
  return AbuseControlsWsModule;
}
