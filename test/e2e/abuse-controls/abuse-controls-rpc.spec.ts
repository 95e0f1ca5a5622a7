import type { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { type RunningMicroservice, startMicroservice } from '../rpc/rpc.app';
import { abuseControlsRpcApp, RpcSeen } from './abuse-controls-rpc.app';

describe('lockouts and shadow mode on microservice handlers (TCP, a real ClientProxy)', () => {
  let client: Redis;
  let service: RunningMicroservice;
  let seen: RpcSeen;

  /** The handler's answer, or the error the client received. */
  const send = async (pattern: string): Promise<unknown> => {
    try {
      return await lastValueFrom(service.client.send<unknown>(pattern, {}));
    } catch (error) {
      return { error };
    }
  };
  const errorOf = (answer: unknown) => (answer as { error?: Record<string, unknown> }).error;
  const outcomes = (policy: string) =>
    seen.events.filter((e) => e.policy === policy).map((e) => e.outcome);

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    seen = new RpcSeen();
    service = await startMicroservice(
      abuseControlsRpcApp(client, uniquePrefix('e2e-abuse-rpc'), seen),
    );
  });
  afterEach(() => service.close());

  it('a lockout refuses with an RpcException whose retryAfter is its end (5 min, not the 1-min window); the handler never runs', async () => {
    expect(await send('login')).toBe('ok');
    expect(await send('login')).toBe('ok');

    // The refusing message starts the lockout: its wait is the block's whole duration.
    expect(errorOf(await send('login'))).toEqual({
      status: 'error',
      code: 'RATE_LIMITED',
      message: "Rate limit of policy 'login' exceeded; retry in 300 s",
      policy: 'login',
      retryAfterMs: 300_000,
      retryAfter: 300,
    });
    // The next one is held by the lockout, not by the window.
    const held = errorOf(await send('login'))!;
    expect(held.retryAfter).toBeGreaterThan(240);
    expect(held.retryAfter).toBeLessThanOrEqual(300);
    expect(held.retryAfterMs).toBeGreaterThan(240_000); // the 5-min lockout, not the 1-min window
    expect(held.retryAfterMs).toBeLessThanOrEqual(300_000);

    expect(seen.handled).toBe(2);
    expect(outcomes('login')).toEqual(['allowed', 'allowed', 'blocked', 'blocked']);
  });

  it('a shadow policy lets its refusals through to the handler and reports them', async () => {
    for (let i = 0; i < 3; i++) expect(await send('canary')).toBe('ok');
    expect(seen.handled).toBe(3);
    expect(outcomes('canary')).toEqual(['allowed', 'shadow-refused', 'shadow-refused']);
  });

  it('@Attempt on a shadow policy runs the handler with the shadow refusal', async () => {
    expect(await send('otp')).toEqual({ shadowRefused: false });
    expect(await send('otp')).toEqual({ shadowRefused: true });
    expect(seen.handled).toBe(2);
    expect(outcomes('otp')).toEqual(['allowed', 'shadow-refused']);
  });
});
