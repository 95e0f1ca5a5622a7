import type { Redis } from 'ioredis';
import type { DecisionEvent } from '../../../lib/nest';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { abuseControlsApp } from './abuse-controls.app';

describe.each(PLATFORMS)('lockouts, shadow mode and the refusal cache on %s', (platform) => {
  let client: Redis;
  let app: RunningApp;
  let events: DecisionEvent[];

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    events = [];
    app = await startApp(abuseControlsApp(client, uniquePrefix('e2e-abuse'), events), platform);
  });
  afterEach(() => app.close());

  const outcomes = (policy: string) =>
    events.filter((e) => e.policy === policy).map((e) => e.outcome);

  it('a lockout answers 429 with Retry-After and the RateLimit header at its end', async () => {
    expect((await app.request('/login')).status).toBe(200);
    expect((await app.request('/login')).status).toBe(200);
    const locked = await app.request('/login');
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBe(300);
    expect(locked.headers.get('ratelimit')).toBe('"login";r=0;t=300');
    expect(await locked.json()).toMatchObject({
      statusCode: 429,
      policy: 'login',
      retryAfter: 300,
    });
    const blocked = events.find((e) => e.outcome === 'blocked')!;
    expect(blocked.blockedUntil! - Date.now()).toBeGreaterThan(240_000); // the 5-min lockout
  });

  it('the refusal cache answers a refused caller without Redis, and events say so', async () => {
    for (let i = 0; i < 3; i++) await app.request('/login');
    const again = await app.request('/login');
    expect(again.status).toBe(429);
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(240); // the lockout's rest
    expect(events.map((e) => e.cached === true)).toEqual([false, false, false, true]);
    expect(outcomes('login')).toEqual(['allowed', 'allowed', 'blocked', 'blocked']);
  });

  it('a shadow policy lets the refusal through, reports it, and logs one line', async () => {
    expect((await app.request('/canary')).status).toBe(200);
    expect((await app.request('/canary')).status).toBe(200);
    expect((await app.request('/canary')).status).toBe(200);
    expect(outcomes('canary')).toEqual(['allowed', 'shadow-refused', 'shadow-refused']);
    expect(app.logs.filter((line) => line.includes("'canary' is in shadow mode"))).toEqual([
      "warn: Policy 'canary' is in shadow mode: let through 1 refusal since its last report",
    ]);
  });

  it('@Attempt on a shadow policy runs the handler with the shadow refusal', async () => {
    const first = await app.request('/otp', { method: 'POST' });
    expect(await first.json()).toEqual({ shadowRefused: false });
    const second = await app.request('/otp', { method: 'POST' });
    expect(second.status).toBe(200);
    expect(await second.json()).toEqual({ shadowRefused: true });
  });

  it('module option shadow puts every policy without its own setting in shadow mode', async () => {
    await app.close();
    events = [];
    app = await startApp(
      abuseControlsApp(client, uniquePrefix('e2e-abuse'), events, { shadow: true }),
      platform,
    );
    for (let i = 0; i < 4; i++) expect((await app.request('/login')).status).toBe(200);
    expect(outcomes('login')).toEqual(['allowed', 'allowed', 'shadow-refused', 'shadow-refused']);
  });
});
