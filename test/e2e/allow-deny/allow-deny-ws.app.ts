/**
 * Fixture: a WebSocket gateway (@nestjs/platform-ws) behind the module's deny list, which names
 * 127.0.0.2: a client connecting from that address is denied, one from 127.0.0.1 is not.
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

/** What the handlers and the module's events saw. */
export class WsSeen {
  handled = 0;
  readonly events: DecisionEvent[] = [];
}

export const DENIED_ADDRESS = '127.0.0.2';

export function allowDenyWsApp(client: Redis, prefix: string, seen: WsSeen): Type {
  @WebSocketGateway({ path: '/ws' })
  @UseFilters(new ReplyWithExceptionFilter())
  class ItemsGateway {
    @SubscribeMessage('items')
    @UseGuards(RedlimitGuard)
    @Throttle('two')
    items(@MessageBody() { id }: { id: number }) {
      seen.handled++;
      return { event: 'items', data: { id } };
    }

    @SubscribeMessage('sign-in')
    signIn(@MessageBody() { id }: { id: number }, @Attempt('ip', { policy: 'login' }) _: Attempt) {
      seen.handled++;
      return { event: 'signed-in', data: { id } };
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        policies: {
          two: { algorithm: 'fixed-window', limit: 2, window: '1h' },
          login: { algorithm: 'fixed-window', limit: 2, window: '1h' },
        },
        deny: { ips: [DENIED_ADDRESS] },
        onDecision: (event) => seen.events.push(event),
      }),
    ],
    providers: [ItemsGateway],
  })
  class AllowDenyWsModule {}
  return AllowDenyWsModule;
}
