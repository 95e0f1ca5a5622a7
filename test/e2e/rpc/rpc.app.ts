/**
 * Fixture: a microservice on the TCP transport with @Throttle and @Attempt handlers, reached
 * through a real ClientProxy. RedlimitGuard is both global (with a default policy) and on the
 * controller: each message is still charged once.
 */
import type { AddressInfo, Server } from 'node:net';
import { Controller, type INestMicroservice, Module, type Type, UseGuards } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import {
  type ClientProxy,
  ClientProxyFactory,
  MessagePattern,
  type MicroserviceOptions,
  Payload,
  RpcException,
  Transport,
} from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { Attempt, RedlimitGuard, RedlimitModule, SkipThrottle, Throttle } from '../../../lib/nest';
import { collectingLogger } from '../support/app';

export const PASSWORD = 'correct horse battery staple';

/** Counts handler runs: a refused message must never reach the handler. */
export class Calls {
  count = 0;
}

export interface SignIn {
  email?: string;
  password?: string;
}

export function rpcApp(client: Redis, prefix: string, calls: Calls): Type {
  @Controller()
  @UseGuards(RedlimitGuard)
  class AccountsController {
    @MessagePattern('ping')
    @Throttle('two')
    ping(): string {
      calls.count++;
      return 'pong';
    }

    /** Same policy as ping: a budget of its own under the default key. */
    @MessagePattern('pong')
    @Throttle('two')
    pong(): string {
      return 'ping';
    }

    @MessagePattern('by-tenant')
    @Throttle('two', {
      key: (ctx) => `tenant:${ctx.switchToRpc().getData<{ tenant: string }>().tenant}`,
      override: true, // the tenant's budget alone, not stacked on the default policy
    })
    byTenant(): string {
      return 'ok';
    }

    /** No @Throttle: the global guard applies the default policy. */
    @MessagePattern('plain')
    plain(): string {
      return 'ok';
    }

    @MessagePattern('sign-in')
    @SkipThrottle()
    signIn(
      @Payload() { password }: SignIn,
      @Attempt(['ip', 'email'], { policy: 'login' }) attempt: Attempt,
    ): boolean {
      calls.count++;
      if (password !== PASSWORD) throw new RpcException('Wrong email or password');
      attempt.refund();
      return true;
    }

    /** Every message costs. */
    @MessagePattern('send-code')
    @SkipThrottle()
    sendCode(@Attempt('email', { policy: 'login' }) _attempt: Attempt): boolean {
      calls.count++;
      return true;
    }

    /** The part names its source: the payload. */
    @MessagePattern('send-code-data')
    @SkipThrottle()
    sendCodeData(@Attempt('data.email', { policy: 'login' }) _attempt: Attempt): boolean {
      calls.count++;
      return true;
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
        defaultPolicy: 'two',
      }),
    ],
    controllers: [AccountsController],
    providers: [{ provide: APP_GUARD, useClass: RedlimitGuard }],
  })
  class RpcAppModule {}

  return RpcAppModule;
}

export interface RunningMicroservice {
  readonly app: INestMicroservice;
  readonly client: ClientProxy;
  close(): Promise<void>;
}

/** Boots the module as a TCP microservice on a free port of 127.0.0.1 and connects a client. */
export async function startMicroservice(module: Type): Promise<RunningMicroservice> {
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(module, {
    transport: Transport.TCP,
    options: { host: '127.0.0.1', port: 0 },
    logger: collectingLogger([]),
    abortOnError: false,
  });
  await app.listen();
  const { port } = app.unwrap<Server>().address() as AddressInfo;
  const client = ClientProxyFactory.create({
    transport: Transport.TCP,
    options: { host: '127.0.0.1', port },
  });
  await client.connect();
  return {
    app,
    client,
    close: async () => {
      await client.close();
      await app.close();
    },
  };
}
