import type { Redis } from 'ioredis';
import { apiKeyHash, LimiterRegistry } from '../../../lib/nest';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { count, PLATFORMS, type RunningApp, startApp, statuses } from '../support/app';
import { LIMITS, PlanBook, PlanPolicy, plansApp } from './plans.app';

describe.each(PLATFORMS)('plans and tiers on %s', (platform) => {
  let client: Redis;
  let app: RunningApp;
  let book: PlanBook;
  let prefix: string;

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    book = new PlanBook();
    book.plans.set('sk-free-1', 'free').set('sk-pro-1', 'pro');
    prefix = uniquePrefix('e2e-plans');
    app = await startApp(plansApp(client, prefix, book), platform);
  });
  afterEach(() => app.close());

  /** A request from `ip` (through the trusted local proxy), with an API key when given. */
  const call = (path: string, ip: string, key?: string, method = 'GET') =>
    app.request(path, {
      method,
      headers: { 'x-forwarded-for': ip, ...(key !== undefined && { 'x-api-key': key }) },
    });
  const registry = () => app.app.get(LimiterRegistry);
  /** Units left for `key` under `policy` (a peek at cost 1 answers as if it spent one: + 1). */
  const left = async (policy: string, key: string) => {
    const d = await registry().get(policy).peek(key);
    return d.allowed ? d.remaining + 1 : d.remaining;
  };

  it('three API keys on anonymous, free and pro plans get their own limits on one endpoint', async () => {
    const run = async (ip: string, key: string | undefined, n: number) =>
      statuses(Array.from({ length: n }, () => call('/api/search', ip, key)));
    const anonymous = await run('198.51.100.1', 'sk-unknown', LIMITS.anonymous + 1);
    const free = await run('198.51.100.2', 'sk-free-1', LIMITS.free + 1);
    const pro = await run('198.51.100.3', 'sk-pro-1', LIMITS.pro + 1);
    expect(count(anonymous, 200)).toBe(LIMITS.anonymous);
    expect(count(free, 200)).toBe(LIMITS.free);
    expect(count(pro, 200)).toBe(LIMITS.pro);
    const refused = await call('/api/search', '198.51.100.2', 'sk-free-1');
    expect(await refused.json()).toMatchObject({ statusCode: 429, policy: 'plan-free' });
    // Callers without a key are charged by IP on the anonymous plan.
    const noKey = await run('198.51.100.4', undefined, LIMITS.anonymous + 1);
    expect(count(noKey, 200)).toBe(LIMITS.anonymous);
  });

  it("a key's plan change takes effect within the cache TTL, not per request", async () => {
    const ip = '198.51.100.10';
    for (let i = 0; i < LIMITS.free; i++) {
      expect((await call('/api/search', ip, 'sk-free-1')).status).toBe(200);
    }
    expect((await call('/api/search', ip, 'sk-free-1')).status).toBe(429);
    expect(book.lookups).toBe(1); // cached
    book.plans.set('sk-free-1', 'pro'); // upgraded
    expect((await call('/api/search', ip, 'sk-free-1')).status).toBe(429); // cache still says free
    book.now += PlanPolicy.ttlMs;
    const upgraded = await call('/api/search', ip, 'sk-free-1');
    expect(upgraded.status).toBe(200);
    // Every layer is listed: the default per-IP one, then the plan's.
    expect(upgraded.headers.get('ratelimit-policy')).toBe(
      `"ip";q=${LIMITS.ip};w=60, "plan-pro";q=${LIMITS.pro};w=60`,
    );
    expect(book.lookups).toBe(2);
  });

  it('stacked layers: the endpoint refuses the 3rd export, and the refusal leaves the IP and plan counts as they were', async () => {
    const ip = '198.51.100.20';
    const key = `apiKey:${apiKeyHash('sk-free-1')}`;
    expect((await call('/api/export', ip, 'sk-free-1', 'POST')).status).toBe(201);
    expect((await call('/api/export', ip, 'sk-free-1', 'POST')).status).toBe(201);
    const refused = await call('/api/export', ip, 'sk-free-1', 'POST');
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ policy: 'export' });
    expect(refused.headers.get('ratelimit-policy')).toBe(
      `"ip";q=${LIMITS.ip};w=60, "plan-free";q=${LIMITS.free};w=60, "export";q=${LIMITS.export};w=60`,
    );
    const retry = refused.headers.get('retry-after');
    expect(refused.headers.get('ratelimit')).toMatch(
      new RegExp(`^"ip";r=3;t=\\d+, "plan-free";r=1;t=\\d+, "export";r=0;t=${retry}$`),
    );
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await left('ip', `ip:${ip}`)).toBe(LIMITS.ip - 2);
    expect(await left('plan-free', key)).toBe(LIMITS.free - 2);
    // The plan's last unit is still there for another endpoint.
    expect((await call('/api/search', ip, 'sk-free-1')).status).toBe(200);
    expect((await call('/api/search', ip, 'sk-free-1')).status).toBe(429);
    expect(await left('ip', `ip:${ip}`)).toBe(LIMITS.ip - 3);
  });

  it('50 concurrent requests: exactly the tightest layer admits, and every layer counts exactly those', async () => {
    const ip = '198.51.100.30';
    await call('/api/search', '198.51.100.99', 'sk-pro-1'); // warms the app, the plan cache, Redis
    const before = await left('plan-pro', `apiKey:${apiKeyHash('sk-pro-1')}`);
    const codes = await statuses(
      Array.from({ length: 50 }, () => call('/api/export', ip, 'sk-pro-1', 'POST')),
    );
    const admitted = count(codes, 201);
    expect(admitted).toBe(LIMITS.export);
    expect(count(codes, 429)).toBe(50 - admitted);
    expect(await left('ip', `ip:${ip}`)).toBe(LIMITS.ip - admitted);
    expect(await left('plan-pro', `apiKey:${apiKeyHash('sk-pro-1')}`)).toBe(before - admitted);
    const exportKey = `ApiController.export /api/export|apiKey:${apiKeyHash('sk-pro-1')}`;
    expect(await left('export', exportKey)).toBe(LIMITS.export - admitted);
  });

  it('no API key appears in Redis keys, logs or headers', async () => {
    const responses = await Promise.all([
      call('/api/search', '198.51.100.40', 'sk-pro-1'),
      call('/api/export', '198.51.100.40', 'sk-pro-1', 'POST'),
      call('/api/search', '198.51.100.41', 'sk-free-1'),
    ]);
    for (const r of responses) {
      for (const [, value] of r.headers) expect(value).not.toMatch(/sk-(pro|free)-1/);
    }
    const keys = await client.keys(`${prefix}*`);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key).not.toMatch(/sk-(pro|free)-1/);
    expect(app.logs.join('\n')).not.toMatch(/sk-(pro|free)-1/);
  });

  it('invented API keys cannot mint budgets: unrecognised keys are charged by IP', async () => {
    const ip = '198.51.100.70';
    const codes = await statuses(
      Array.from({ length: 5 }, (_, i) => call('/api/export', ip, `sk-invented-${i}`, 'POST')),
    );
    expect(count(codes, 201)).toBe(LIMITS.export);
    expect(await left('export', `ApiController.export /api/export|ip:${ip}`)).toBe(0);
  });

  it('layers of one policy with overlapping keys are one part: each key charged once', async () => {
    expect((await call('/overlap', '198.51.100.80')).status).toBe(200);
    expect(await left('export', 'user:ada')).toBe(LIMITS.export - 1);
    expect(await left('export', 'tenant:acme')).toBe(LIMITS.export - 1);
  });

  it("a controller's override drops the default policy for its handlers", async () => {
    const ip = '198.51.100.90';
    for (let i = 0; i < LIMITS.ip + 2; i++) {
      expect((await call('/internal', ip)).status).toBe(200); // 'soft' allows 10; no 'ip' layer
    }
    expect(await left('ip', `ip:${ip}`)).toBe(LIMITS.ip);
  });

  it('a resolver naming an unknown policy is a server error, never a pass', async () => {
    const response = await call('/api/broken-plan', '198.51.100.50');
    expect(response.status).toBe(500);
    expect(app.logs.join('\n')).toMatch(/returned 'platinum', which is not a registered policy/);
  });

  it('soft limit: the warning header appears from the threshold (8 of 10), not before', async () => {
    const warnings: Array<string | null> = [];
    for (let i = 0; i < 10; i++) {
      const r = await call('/api/dashboard', '198.51.100.60');
      expect(r.status).toBe(200);
      warnings.push(r.headers.get('ratelimit-warning'));
    }
    expect(warnings.slice(0, 7)).toEqual(Array(7).fill(null));
    expect(warnings.slice(7)).toEqual(['"soft";q=10;r=2', '"soft";q=10;r=1', '"soft";q=10;r=0']);
  });
});
