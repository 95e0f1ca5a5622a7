import { createServer } from 'node:net';
import Redis from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { LimiterRegistry } from '../../../lib/nest';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { Calls, PASSWORD, rpcApp, type RunningMicroservice, startMicroservice } from './rpc.app';

interface RpcError {
  status: string;
  code?: string;
  message: string;
  policy?: string;
  retryAfterMs?: number;
  retryAfter?: number;
}

describe('microservice handlers (TCP transport, a real ClientProxy)', () => {
  let redis: Redis;
  let service: RunningMicroservice;
  let calls: Calls;

  /** The handler's answer, or the error the client received. */
  const send = async (pattern: string, data: object = {}): Promise<unknown> => {
    try {
      return await lastValueFrom(service.client.send<unknown>(pattern, data));
    } catch (error) {
      return { error: error as RpcError };
    }
  };
  const errorOf = (answer: unknown) => (answer as { error?: RpcError }).error;

  beforeAll(async () => {
    redis = createTestClient();
    await warmPool(redis);
  });
  afterAll(() => redis.quit());
  beforeEach(async () => {
    calls = new Calls();
    service = await startMicroservice(rpcApp(redis, uniquePrefix('e2e-rpc'), calls));
  });
  afterEach(() => service.close());

  it('@Throttle limit 2: the third message is refused with an RpcException carrying retryAfterMs; the handler never runs', async () => {
    expect(await send('ping')).toBe('pong');
    expect(await send('ping')).toBe('pong');

    const error = errorOf(await send('ping'))!;
    expect(error).toMatchObject({ status: 'error', code: 'RATE_LIMITED', policy: 'two' });
    expect(error.message).toMatch(/^Rate limit of policy 'two' exceeded; retry in \d+ s$/);
    const retryAfterMs = error.retryAfterMs!;
    expect(Number.isInteger(retryAfterMs)).toBe(true);
    expect(retryAfterMs).toBeGreaterThan(0);
    expect(retryAfterMs).toBeLessThanOrEqual(3_600_000);
    expect(error.retryAfter).toBe(Math.max(1, Math.ceil(retryAfterMs / 1000)));
    expect(calls.count).toBe(2);
  });

  it("the default key is the handler + the TCP peer's address", async () => {
    await send('ping');
    await send('ping');
    expect(errorOf(await send('ping'))?.code).toBe('RATE_LIMITED');
    expect(await send('pong')).toBe('ping'); // same policy, another handler: its own budget

    const two = service.app.get(LimiterRegistry).get('two');
    expect((await two.peek('rpc AccountsController.ping|ip:127.0.0.1')).allowed).toBe(false);
    expect((await two.peek('rpc AccountsController.pong|ip:127.0.0.1')).allowed).toBe(true);
  });

  it('the global guard limits handlers without @Throttle by the default policy', async () => {
    expect(await send('plain')).toBe('ok');
    expect(await send('plain')).toBe('ok');
    expect(errorOf(await send('plain'))).toMatchObject({ code: 'RATE_LIMITED', policy: 'two' });
  });

  it('a key function sees the payload', async () => {
    expect(await send('by-tenant', { tenant: 'acme' })).toBe('ok');
    expect(await send('by-tenant', { tenant: 'acme' })).toBe('ok');
    expect(errorOf(await send('by-tenant', { tenant: 'acme' }))?.code).toBe('RATE_LIMITED');
    expect(await send('by-tenant', { tenant: 'globex' })).toBe('ok');
  });

  it('@Attempt with refund: right passwords cost nothing, the third wrong one is refused before the handler runs', async () => {
    const signIn = (password: string) => send('sign-in', { email: 'alice@example.com', password });
    for (let i = 0; i < 3; i++) expect(await signIn(PASSWORD)).toBe(true);
    for (let i = 0; i < 2; i++) {
      expect(errorOf(await signIn('guess'))?.message).toBe('Wrong email or password');
    }
    const refused = errorOf(await signIn('guess'));
    expect(refused).toMatchObject({ code: 'RATE_LIMITED', policy: 'login' });
    expect(refused?.retryAfterMs).toBeGreaterThan(0);
    expect(calls.count).toBe(5);
    expect(errorOf(await signIn(PASSWORD))?.code).toBe('RATE_LIMITED'); // the budget is spent
  });

  it('a store failure under fail mode closed is refused as RATE_LIMIT_UNAVAILABLE, not as a budget answer', async () => {
    await service.close();
    const dead = new Redis({
      port: await closedPort(),
      host: '127.0.0.1',
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    try {
      service = await startMicroservice(rpcApp(dead, uniquePrefix('e2e-rpc'), calls));
      const error = errorOf(await send('ping'));
      expect(error).toMatchObject({ code: 'RATE_LIMIT_UNAVAILABLE', policy: 'two' });
      expect(error?.message).toMatch(/^Rate limiting for policy 'two' is unavailable/);
      expect(error?.retryAfterMs).toBeGreaterThan(0);
      expect(errorOf(await send('send-code', { email: 'a@example.com' }))?.code).toBe(
        'RATE_LIMIT_UNAVAILABLE',
      );
      expect(calls.count).toBe(0);
    } finally {
      dead.disconnect();
    }
  });

  it("'data.email' reads the payload; an object is refused as BAD_USER_INPUT before anything is charged", async () => {
    expect(errorOf(await send('send-code-data', { email: { $ne: '' } }))).toMatchObject({
      code: 'BAD_USER_INPUT',
      part: 'data.email',
    });
    expect(await send('send-code-data', { email: 'alice@example.com' })).toBe(true);
    expect(await send('send-code-data', { email: 'Alice@example.com' })).toBe(true);
    expect(errorOf(await send('send-code-data', { email: 'alice@example.com' }))?.code).toBe(
      'RATE_LIMITED',
    );
    expect(calls.count).toBe(2);
  });

  it('@Attempt parts come from the payload', async () => {
    expect(await send('send-code', { email: 'alice@example.com' })).toBe(true);
    expect(await send('send-code', { email: ' Alice@Example.com' })).toBe(true);
    expect(errorOf(await send('send-code', { email: 'alice@example.com' }))?.code).toBe(
      'RATE_LIMITED',
    );
    expect(await send('send-code', { email: 'bob@example.com' })).toBe(true);
    expect(calls.count).toBe(3);
  });
});

/** A port of 127.0.0.1 that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
