import type { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { type RunningMicroservice, startMicroservice } from '../rpc/rpc.app';
import { allowDenyRpcApp, RpcSeen } from './allow-deny-rpc.app';

describe('allow and deny lists on microservice handlers (TCP, a real ClientProxy)', () => {
  let client: Redis;
  let service: RunningMicroservice | undefined;
  let seen: RpcSeen;
  let prefix: string;

  /** The handler's answer, or the error the client received. */
  const send = async (pattern: string, data: object = {}): Promise<unknown> => {
    try {
      return await lastValueFrom(service!.client.send<unknown>(pattern, data));
    } catch (error) {
      return { error };
    }
  };

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(() => {
    seen = new RpcSeen();
    prefix = uniquePrefix('e2e-allow-deny-rpc');
  });
  afterEach(() => service?.close());

  it('a denied peer gets an RpcException with code FORBIDDEN; the handler never runs, nothing is charged', async () => {
    service = await startMicroservice(
      allowDenyRpcApp(client, prefix, seen, { deny: { ips: ['127.0.0.0/8'] } }),
    );
    const forbidden = { error: { status: 'error', code: 'FORBIDDEN', message: 'Access denied' } };
    expect(await send('ping')).toEqual(forbidden);
    expect(await send('sign-in', { email: 'a@example.com' })).toEqual(forbidden);
    expect(seen.handled).toBe(0);
    expect(await client.keys(`${prefix}*`)).toEqual([]);
    expect(seen.events.map((e) => [e.policy, e.outcome])).toEqual([
      ['two', 'denied'],
      ['two', 'denied'],
    ]);
  });

  it('skipIf on the message payload: uncharged, and @Attempt gets an attempt that spent nothing', async () => {
    service = await startMicroservice(
      allowDenyRpcApp(client, prefix, seen, {
        skipIf: (ctx) => ctx.switchToRpc().getData<{ internal?: boolean }>().internal === true,
      }),
    );
    for (let i = 0; i < 3; i++) expect(await send('ping', { internal: true })).toBe('pong');
    for (let i = 0; i < 3; i++) {
      expect(await send('sign-in', { email: 'a@example.com', internal: true })).toBe(true);
    }
    expect(seen.spent).toEqual([false, false, false]);
    expect(await client.keys(`${prefix}*`)).toEqual([]);
    await send('ping');
    await send('ping');
    expect(await send('ping')).toMatchObject({ error: { code: 'RATE_LIMITED' } });
  });
});
