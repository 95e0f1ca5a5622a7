/**
 * Fixture: a throttled route and an @Attempt route keyed on the client IP, and a middleware that
 * makes a request's peer address unreadable on demand (as after the client reset the connection).
 */
import {
  Controller,
  Get,
  HttpCode,
  type MiddlewareConsumer,
  Module,
  type NestModule,
  Post,
  type Type,
  UseGuards,
} from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  Attempt,
  type ClientIpOptions,
  RedlimitGuard,
  RedlimitModule,
  type RedlimitModuleOptions,
  Throttle,
} from '../../../lib/nest';
import { CountingStore } from '../support/counting-store';

/** How many times each handler ran (reset it between specs). */
export const handled = { throttled: 0, attempt: 0 };

@Controller()
@UseGuards(RedlimitGuard)
class IpController {
  @Get('throttled')
  @Throttle('two')
  throttled(): string {
    handled.throttled++;
    return 'ok';
  }

  @Post('attempt')
  @HttpCode(200)
  attempt(@Attempt('ip', { policy: 'two' }) _attempt: Attempt): string {
    handled.attempt++;
    return 'ok';
  }
}

/** `x-drop-peer: 1` hides the socket's remote address for this request (restored after it). */
function dropPeer(request: IncomingMessage, response: ServerResponse, next: () => void): void {
  if (request.headers['x-drop-peer'] === '1') {
    const socket = request.socket;
    Object.defineProperty(socket, 'remoteAddress', { value: undefined, configurable: true });
    response.on('close', () => delete (socket as { remoteAddress?: string }).remoteAddress);
  }
  next();
}

export function clientIpApp(
  clientIp?: ClientIpOptions,
  store = new CountingStore(),
  extra: Pick<RedlimitModuleOptions, 'allow'> = {},
): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        store,
        policies: { two: { algorithm: 'sliding-window', limit: 2, window: '1m' } },
        ...(clientIp && { clientIp }),
        ...extra,
      }),
    ],
    controllers: [IpController],
  })
  class ClientIpAppModule implements NestModule {
    configure(consumer: MiddlewareConsumer): void {
      consumer.apply(dropPeer).forRoutes('*path');
    }
  }
  return ClientIpAppModule;
}
