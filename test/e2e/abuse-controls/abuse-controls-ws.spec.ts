import type { INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { type Reply, startWsApp, WsClient } from '../ws/ws.app';
import { abuseControlsWsApp, WsSeen } from './abuse-controls-ws.app';

describe('lockouts and shadow mode on a WebSocket gateway (@nestjs/platform-ws)', () => {
  let client: Redis;
  let app: INestApplication;
  let socket: WsClient;
  let seen: WsSeen;

  const errorOf = (reply: Reply) =>
    (reply.event === 'exception' ? reply.data.error : undefined) as
      Record<string, unknown> | undefined;
  const outcomes = (policy: string) =>
    seen.events.filter((e) => e.policy === policy).map((e) => e.outcome);

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    seen = new WsSeen();
    let url: string;
    ({ app, url } = await startWsApp(
      abuseControlsWsApp(client, uniquePrefix('e2e-abuse-ws'), seen),
    ));
    socket = await WsClient.connect(`${url}/ws`);
  });
  afterEach(async () => {
    await socket.close();
    await app.close();
  });

  it('a lockout refuses with a WsException whose retryAfter is its end (5 min, not the 1-min window); the handler never runs', async () => {
    expect((await socket.call('login')).event).toBe('logged-in');
    expect((await socket.call('login')).event).toBe('logged-in');

    // The refusing message starts the lockout: its wait is the block's whole duration.
    expect(errorOf(await socket.call('login'))).toEqual({
      status: 'error',
      code: 'RATE_LIMITED',
      message: "Rate limit of policy 'login' exceeded; retry in 300 s",
      policy: 'login',
      retryAfterMs: 300_000,
      retryAfter: 300,
    });
    // The next one is held by the lockout, not by the window.
    const held = errorOf(await socket.call('login'))!;
    expect(held.retryAfter).toBeGreaterThan(240);
    expect(held.retryAfter).toBeLessThanOrEqual(300);
    expect(held.retryAfterMs).toBeGreaterThan(240_000); // the 5-min lockout, not the 1-min window
    expect(held.retryAfterMs).toBeLessThanOrEqual(300_000);

    expect(seen.handled).toBe(2);
    expect(outcomes('login')).toEqual(['allowed', 'allowed', 'blocked', 'blocked']);
  });

  it('a shadow policy lets its refusals through to the handler and reports them', async () => {
    for (let i = 0; i < 3; i++) expect((await socket.call('canary')).event).toBe('canary-ok');
    expect(seen.handled).toBe(3);
    expect(outcomes('canary')).toEqual(['allowed', 'shadow-refused', 'shadow-refused']);
  });

  it('@Attempt on a shadow policy runs the handler with the shadow refusal', async () => {
    expect((await socket.call('otp')).data).toEqual({ id: 1, shadowRefused: false });
    expect((await socket.call('otp')).data).toEqual({ id: 2, shadowRefused: true });
    expect(seen.handled).toBe(2);
    expect(outcomes('otp')).toEqual(['allowed', 'shadow-refused']);
  });
});
