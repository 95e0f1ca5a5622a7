/**
 * Review of d1eb33d / 4ffd608: a `concurrency` policy under @Throttle on a microservice handler.
 * Issue 15 part 2: "a concurrency policy under @Throttle takes the lease in the guard and releases
 * it when the response has finished or the connection closed (…; GraphQL/WS/RPC when the handler
 * settles)".
 */
import { Controller, Module, type Type } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { MessagePattern } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { RedlimitGuard, RedlimitModule, Throttle } from '../../../lib/nest';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { type RunningMicroservice, startMicroservice } from '../rpc/rpc.app';

function leaseApp(client: Redis, prefix: string): Type {
  @Controller()
  class WorkController {
    @MessagePattern('work')
    @Throttle('one-at-a-time')
    async work(): Promise<string> {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return 'done';
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        policies: { 'one-at-a-time': { algorithm: 'concurrency', limit: 1, window: '1m' } },
      }),
    ],
    controllers: [WorkController],
    providers: [{ provide: APP_GUARD, useClass: RedlimitGuard }],
  })
  class LeaseRpcModule {}
  return LeaseRpcModule;
}

describe('review: concurrency lease under @Throttle on a microservice (TCP)', () => {
  let redis: Redis;
  let service: RunningMicroservice;

  beforeAll(async () => {
    redis = createTestClient();
    await warmPool(redis);
    service = await startMicroservice(leaseApp(redis, uniquePrefix('e2e-review-lease-rpc')));
  });
  afterAll(async () => {
    await service.close();
    await redis.quit();
  });

  const send = async (): Promise<unknown> => {
    try {
      return await lastValueFrom(service.client.send<unknown>('work', {}));
    } catch (error) {
      return { error: (error as { code?: string }).code ?? String(error) };
    }
  };

  // Fixed (found in review of 4ffd608): RedlimitGuard.releaseLeases (lib/nest/redlimit.guard.ts ~line 215)
  // ignores releaseOnClose's `false` (no Node response: RPC, WebSocket), so the lease of a
  // settled message is held for the whole window: with limit 1 and window 1m, one message per
  // minute gets through even though none is ever in flight at once. Fix: for non-HTTP contexts
  // release from an interceptor when the handler's observable settles (finalize()), as the issue
  // asks ("GraphQL/WS/RPC when the handler settles").
  it('messages sent one after another each get the single slot once the previous settled', async () => {
    expect(await send()).toBe('done');
    expect(await send()).toBe('done');
    expect(await send()).toBe('done');
  });
});

/** A concurrency `defaultPolicy` alone (no @Throttle) on a microservice handler under APP_GUARD. */
function defaultLeaseApp(client: Redis, prefix: string): Type {
  @Controller()
  class WorkController {
    @MessagePattern('work')
    async work(): Promise<string> {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return 'done';
    }
  }

  @Module({
    imports: [
      RedlimitModule.forRoot({
        redis: { client },
        prefix,
        policies: { 'one-at-a-time': { algorithm: 'concurrency', limit: 1, window: '1m' } },
        defaultPolicy: 'one-at-a-time',
      }),
    ],
    controllers: [WorkController],
    providers: [{ provide: APP_GUARD, useClass: RedlimitGuard }],
  })
  class DefaultLeaseRpcModule {}
  return DefaultLeaseRpcModule;
}

describe('a concurrency defaultPolicy alone on a microservice handler (TCP)', () => {
  let redis: Redis;
  let service: RunningMicroservice;

  beforeAll(async () => {
    redis = createTestClient();
    await warmPool(redis);
    service = await startMicroservice(
      defaultLeaseApp(redis, uniquePrefix('e2e-lease-rpc-default')),
    );
  });
  afterAll(async () => {
    await service.close();
    await redis.quit();
  });

  const send = async (): Promise<unknown> => {
    try {
      return await lastValueFrom(service.client.send<unknown>('work', {}));
    } catch (error) {
      return { error: (error as { code?: string }).code ?? String(error) };
    }
  };

  // Its lease used to run for the whole window: only handlers under @Throttle got the interceptor.
  it('messages sent one after another each get the single slot once the previous settled', async () => {
    expect(await send()).toBe('done');
    expect(await send()).toBe('done');
    expect(await send()).toBe('done');
  });
});
