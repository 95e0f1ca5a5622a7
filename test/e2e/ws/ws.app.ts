/**
 * Fixture: a WebSocket gateway on @nestjs/platform-ws with @Throttle and @Attempt handlers, and a
 * real `ws` client. Nest applies no global enhancers to gateways, so the gateway names the guard
 * and the interceptor itself; and platform-ws does not send exceptions to the client (Nest's
 * filter emits them on the server-side socket object), so it has the small filter the README shows.
 */
import type { IncomingMessage } from 'node:http';
import {
  type ArgumentsHost,
  Catch,
  type ExceptionFilter,
  type INestApplication,
  Module,
  type Type,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { WsAdapter } from '@nestjs/platform-ws';
import {
  MessageBody,
  type OnGatewayConnection,
  SubscribeMessage,
  WebSocketGateway,
  WsException,
} from '@nestjs/websockets';
import type { Redis } from 'ioredis';
import WebSocket from 'ws';
import { Attempt, RedlimitGuard, RedlimitModule, Throttle } from '../../../lib/nest';
import { collectingLogger } from '../support/app';

export const PASSWORD = 'correct horse battery staple';

/** Counts handler runs: a refused message must never reach the handler. */
export class Calls {
  count = 0;
}

interface Message {
  id?: number;
  email?: string;
  password?: string;
  room?: string;
}

/** What the client gets back: `{ event, data: { id, … } }`. */
export interface Reply {
  event: string;
  data: { id: number; error?: unknown };
}

/** Sends a gateway's exceptions to the client, answering the message that caused them. */
@Catch()
export class ReplyWithExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const ws = host.switchToWs();
    const error = exception instanceof WsException ? exception.getError() : 'Internal error';
    const { id } = ws.getData<Message>();
    ws.getClient<WebSocket>().send(JSON.stringify({ event: 'exception', data: { id, error } }));
  }
}

export function wsApp(client: Redis, prefix: string, calls: Calls): Type {
  @WebSocketGateway({ path: '/ws' })
  @UseFilters(new ReplyWithExceptionFilter())
  class ChatGateway {
    @SubscribeMessage('ping')
    @UseGuards(RedlimitGuard)
    @Throttle('two')
    ping(@MessageBody() { id }: Message) {
      calls.count++;
      return { event: 'pong', data: { id } };
    }

    /** Same policy as ping: a budget of its own under the default key. */
    @SubscribeMessage('pong')
    @UseGuards(RedlimitGuard)
    @Throttle('two')
    pong(@MessageBody() { id }: Message) {
      return { event: 'ping', data: { id } };
    }

    @SubscribeMessage('join')
    @UseGuards(RedlimitGuard)
    @Throttle('two', (ctx) => `room:${ctx.switchToWs().getData<Message>().room}`)
    join(@MessageBody() { id }: Message) {
      return { event: 'joined', data: { id } };
    }

    @SubscribeMessage('sign-in')
    signIn(
      @MessageBody() { id, password }: Message,
      @Attempt(['ip', 'email'], { policy: 'login' }) attempt: Attempt,
    ) {
      calls.count++;
      if (password !== PASSWORD) throw new WsException('Wrong email or password');
      attempt.refund();
      return { event: 'signed-in', data: { id } };
    }

    /** Every message costs. */
    @SubscribeMessage('send-code')
    sendCode(@MessageBody() { id }: Message, @Attempt('email', { policy: 'login' }) _: Attempt) {
      calls.count++;
      return { event: 'code-sent', data: { id } };
    }

    /** The part names its source: the message data. */
    @SubscribeMessage('send-code-data')
    sendCodeData(
      @MessageBody() { id }: Message,
      @Attempt('data.email', { policy: 'login' }) _: Attempt,
    ) {
      calls.count++;
      return { event: 'code-sent', data: { id } };
    }
  }

  /** Keeps the upgrade request on the client, so X-Forwarded-For from a trusted proxy counts. */
  @WebSocketGateway({ path: '/ws-behind-proxy' })
  @UseFilters(new ReplyWithExceptionFilter())
  class ProxiedGateway implements OnGatewayConnection {
    handleConnection(client: WebSocket & { request?: IncomingMessage }, request: IncomingMessage) {
      client.request = request;
    }

    @SubscribeMessage('ping')
    @UseGuards(RedlimitGuard)
    @Throttle('two')
    ping(@MessageBody() { id }: Message) {
      return { event: 'pong', data: { id } };
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
        clientIp: { trustedProxies: ['loopback'] },
      }),
    ],
    providers: [ChatGateway, ProxiedGateway],
  })
  class WsAppModule {}

  return WsAppModule;
}

/** Boots the app with the ws adapter on a free port of 127.0.0.1; returns it and `ws://…:port`. */
export async function startWsApp(module: Type): Promise<{ app: INestApplication; url: string }> {
  const app = await NestFactory.create(module, {
    logger: collectingLogger([]),
    abortOnError: false,
  });
  app.useWebSocketAdapter(new WsAdapter(app));
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace(/^http:\/\/[^:]+/, 'ws://127.0.0.1');
  return { app, url };
}

/** A `ws` client that matches replies to messages by id. */
export class WsClient {
  private nextId = 1;
  private readonly waiting = new Map<number, (reply: Reply) => void>();

  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (raw: WebSocket.RawData) => {
      const reply = JSON.parse((raw as Buffer).toString('utf8')) as Reply; // text frames arrive as one Buffer
      this.waiting.get(reply.data.id)?.(reply);
      this.waiting.delete(reply.data.id);
    });
  }

  /** Connects, from `localAddress` when given (any 127.x.y.z reaches a server on 127.0.0.1). */
  static connect(
    url: string,
    options: { localAddress?: string; headers?: Record<string, string> } = {},
  ): Promise<WsClient> {
    const socket = new WebSocket(url, options);
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(new WsClient(socket)));
      socket.once('error', reject);
    });
  }

  /** Sends `{ event, data }` and resolves with the reply to it. */
  call(event: string, data: Message = {}): Promise<Reply> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.socket.send(JSON.stringify({ event, data: { ...data, id } }));
    });
  }

  close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.once('close', () => resolve());
      this.socket.close();
    });
  }
}
