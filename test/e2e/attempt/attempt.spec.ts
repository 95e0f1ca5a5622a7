import type { Redis } from 'ioredis';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { count, PLATFORMS, type RunningApp, startApp, statuses } from '../support/app';
import {
  attemptApp,
  Calls,
  type FlakyStore,
  flakyStore,
  PASSWORD,
  ThrowingHookInterceptor,
} from './attempt.app';

describe.each(PLATFORMS)('@Attempt on %s', (platform) => {
  let client: Redis;
  let app: RunningApp;
  let store: FlakyStore;
  let calls: Calls;
  let prefix: string;

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    prefix = uniquePrefix('e2e-attempt');
    store = flakyStore(client, prefix);
    calls = new Calls();
    app = await startApp(attemptApp(store, calls), platform);
  });
  afterEach(() => app.close());

  const signIn = (email: string, password: string, path = '/sign-in') =>
    app.request(path, { method: 'POST', body: { email, password } });

  it('40 correct sign-ins in a row all succeed: a right password refunds the attempt', async () => {
    for (let i = 0; i < 40; i++) {
      expect((await signIn('alice@example.com', PASSWORD)).status).toBe(200);
    }
    expect(calls.count).toBe(40);
  });

  it('10 wrong passwords, then the 11th request — even with the right password — gets 429 before the handler runs', async () => {
    for (let i = 0; i < 10; i++) {
      expect((await signIn('alice@example.com', 'wrong')).status).toBe(401);
    }
    const refused = await signIn('alice@example.com', PASSWORD);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The account's budget is not disclosed to whoever names it (only Retry-After says when).
    expect(refused.headers.get('ratelimit')).toBeNull();
    expect(await refused.json()).toMatchObject({ statusCode: 429, policy: 'login' });
    expect(calls.count).toBe(10);
  });

  it('the same email in a different case (and with spaces) shares the budget', async () => {
    const spellings = ['alice@example.com', ' Alice@Example.COM ', 'ALICE@EXAMPLE.COM'];
    for (let i = 0; i < 10; i++) await signIn(spellings[i % 3]!, 'wrong');
    expect((await signIn(' aLiCe@example.com', 'wrong')).status).toBe(429);
  });

  it('no email sits in Redis in plain text', async () => {
    await signIn('Alice@Example.com', 'wrong');
    const keys = await client.keys(`${prefix}*`);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.join('\n')).not.toMatch(/alice|example|127\.0\.0\.1/i);
    expect(keys.some((key) => key.includes('{email:'))).toBe(true);
  });

  it('100 concurrent wrong sign-ins at limit 10 → exactly 10 reach the handler', async () => {
    const codes = await statuses(
      Array.from({ length: 100 }, () => signIn('alice@example.com', 'wrong')),
    );
    expect(calls.count).toBe(10);
    expect(count(codes, 401)).toBe(10);
    expect(count(codes, 429)).toBe(90);
  });

  it("refundOn: 'success' makes only failures cost", async () => {
    for (let i = 0; i < 15; i++) {
      expect((await signIn('bob@example.com', PASSWORD, '/sign-in-on-success')).status).toBe(200);
    }
    for (let i = 0; i < 10; i++) await signIn('bob@example.com', 'wrong', '/sign-in-on-success');
    expect((await signIn('bob@example.com', PASSWORD, '/sign-in-on-success')).status).toBe(429);
  });

  it('a handler that throws after refund() still refunds', async () => {
    for (let i = 0; i < 15; i++) {
      expect((await signIn('carol@example.com', '', '/refund-then-throw')).status).toBe(400);
    }
    expect(calls.count).toBe(15);
  });

  it('settles exactly once: one refund per refunded attempt, none for kept costs', async () => {
    for (let i = 0; i < 3; i++) await signIn('alice@example.com', PASSWORD);
    for (let i = 0; i < 2; i++) await signIn('alice@example.com', 'wrong');
    expect(store.refunds).toBe(3);
    for (let i = 0; i < 3; i++) {
      const response = await signIn('erin@example.com', '', '/settle-self');
      expect(await response.json()).toEqual({ settled: true });
    }
    expect(store.refunds).toBe(6); // the handler's own settle() was the only one
  });

  it('a refund failure (store down at settlement) does not turn a 200 into a 500; it is logged', async () => {
    const response = await signIn('dave@example.com', '', '/refund-store-down');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true });
    expect(app.logs.join('\n')).toMatch(/warn: .*refund.*policy 'login'.*Connection is closed/i);
  });

  it('a settlement hook that throws still lets the response out', async () => {
    const own = await startApp(attemptApp(store, calls, ThrowingHookInterceptor), platform);
    try {
      const response = await own.request('/refund-store-down', {
        method: 'POST',
        body: { email: 'frank@example.com', password: '' },
      });
      expect(response.status).toBe(200);
    } finally {
      await own.close();
    }
  });

  it("'user' keys on request.user.id; requests without a user share one '-' budget", async () => {
    const as = (user?: string) =>
      app
        .request('/per-user', { method: 'POST', headers: user ? { 'x-user': user } : {} })
        .then((r) => r.status);
    for (let i = 0; i < 10; i++) expect(await as('u1')).toBe(200);
    expect(await as('u1')).toBe(429);
    expect(await as('u2')).toBe(200);
    for (let i = 0; i < 10; i++) expect(await as()).toBe(200);
    expect(await as()).toBe(429);
  });

  it('a function part keys on what it returns, and cost charges that many units', async () => {
    const otp = (phone: string) =>
      app.request('/otp', { method: 'POST', headers: { 'x-phone': phone } });
    expect(await (await otp('+1 555 0100')).json()).toEqual({ remaining: 5 });
    expect(await (await otp('+1 555 0100')).json()).toEqual({ remaining: 0 });
    expect((await otp('+1 555 0100')).status).toBe(429);
    expect((await otp('+1 555 0199')).status).toBe(200);
  });
});
