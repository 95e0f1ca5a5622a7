import type { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { count, PLATFORMS, type RunningApp, startApp, statuses } from '../support/app';
import { throttlerStorageApp } from './throttler-storage.app';

describe.each(PLATFORMS)('@nestjs/throttler with RedlimitThrottlerStorage on %s', (platform) => {
  let client: Redis;
  let app: RunningApp;
  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    app = await startApp(throttlerStorageApp(client, uniquePrefix('e2e-throttler')), platform);
    await app.request('/free'); // warms the app's connections
  });
  afterEach(() => app.close());

  it('5 per minute: five 200s counting down, then 429 with Retry-After', async () => {
    const remaining: Array<string | null> = [];
    for (let i = 0; i < 5; i++) {
      const ok = await app.request('/hello');
      expect(ok.status).toBe(200);
      remaining.push(ok.headers.get('x-ratelimit-remaining'));
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);
    const refused = await app.request('/hello');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('50 concurrent requests at limit 5: exactly 5 get through', async () => {
    const codes = await statuses(Array.from({ length: 50 }, () => app.request('/hello')));
    expect(count(codes, 200)).toBe(5);
    expect(count(codes, 429)).toBe(45);
  });

  it('named throttlers, @Throttle and @SkipThrottle: the burst throttler alone (limit 2 on this route), with its own Retry-After', async () => {
    expect((await app.request('/burst')).status).toBe(200);
    expect((await app.request('/burst')).status).toBe(200);
    const refused = await app.request('/burst');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after-burst')).not.toBeNull();
    for (let i = 0; i < 10; i++) expect((await app.request('/free')).status).toBe(200);
  });

  it('a route every throttler skips carries no rate-limit headers', async () => {
    const free = await app.request('/free');
    expect(free.status).toBe(200);
    const named = [...free.headers.keys()].filter((name) => /ratelimit|retry-after/.test(name));
    expect(named).toEqual([]);
  });

  it('both throttlers on one route: headers per throttler, the stricter refuses with its own Retry-After, and the message counts the hit over', async () => {
    const first = await app.request('/both');
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit')).toBe('5');
    expect(first.headers.get('x-ratelimit-remaining')).toBe('4');
    expect(first.headers.get('x-ratelimit-limit-burst')).toBe('2');
    expect(first.headers.get('x-ratelimit-remaining-burst')).toBe('1');
    expect(first.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
    expect(first.headers.get('x-ratelimit-reset-burst')).toMatch(/^\d+$/);
    const second = await app.request('/both');
    expect(second.headers.get('x-ratelimit-remaining')).toBe('3');
    expect(second.headers.get('x-ratelimit-remaining-burst')).toBe('0');
    const refused = await app.request('/both');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after-burst')).toMatch(/^\d+$/);
    expect(refused.headers.get('retry-after')).toBeNull();
    expect(await refused.json()).toMatchObject({ statusCode: 429, message: 'over: 3 hits of 2' });
  });

  it('a class-wide @Throttle and a handler that raises it: each handler its own limit and count', async () => {
    const limits: Array<[string | null, string | null]> = [];
    for (const path of ['/limit', '/limit/higher', '/limit/higher']) {
      const ok = await app.request(path);
      expect(ok.status).toBe(200);
      limits.push([ok.headers.get('x-ratelimit-limit'), ok.headers.get('x-ratelimit-remaining')]);
    }
    expect(limits).toEqual([
      ['2', '1'],
      ['4', '3'],
      ['4', '2'],
    ]);
    expect((await app.request('/limit')).status).toBe(200);
    expect((await app.request('/limit')).status).toBe(429);
    expect((await app.request('/limit/higher')).status).toBe(200);
  });

  it('a generateKey of the caller alone: two routes share one budget', async () => {
    const codes = [];
    for (const path of ['/shared/a', '/shared/b', '/shared/a', '/shared/b', '/shared/a']) {
      codes.push((await app.request(path)).status);
    }
    expect(codes).toEqual([200, 200, 200, 429, 429]);
  });

  it('blockDuration longer than ttl: refused past the window until the block ends, then counted afresh', async () => {
    // The two calls must share a one-second window (Redis keeps this machine's time): start early
    // in one, so a busy machine does not put a window boundary between them.
    await sleep(1_050 - (Date.now() % 1_000));
    expect((await app.request('/blocking')).status).toBe(200);
    const refused = await app.request('/blocking');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('2');
    await sleep(1_200); // the one-second window is over; the block is not
    expect((await app.request('/blocking')).status).toBe(429);
    await sleep(1_000); // the block is over
    const again = await app.request('/blocking');
    expect(again.status).toBe(200);
    expect(again.headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it('a limit resolved per request, alternating 3 and 5: one budget, 4 of 20 through (as @nestjs/throttler)', async () => {
    const codes = [];
    for (let i = 0; i < 20; i++) codes.push((await app.request('/alternating')).status);
    expect(count(codes, 200)).toBe(4);
    expect(count(codes, 429)).toBe(16);
  });

  it('odd limits answer as @nestjs/throttler does: 0 refuses all, 2.5 admits 2, Infinity admits all (never a 500)', async () => {
    const run = async (path: string) => {
      const codes = [];
      for (let i = 0; i < 6; i++) codes.push((await app.request(path)).status);
      return codes;
    };
    expect(await run('/alternating/zero')).toEqual([429, 429, 429, 429, 429, 429]);
    expect(await run('/alternating/fraction')).toEqual([200, 200, 429, 429, 429, 429]);
    expect(await run('/alternating/unlimited')).toEqual([200, 200, 200, 200, 200, 200]);
  });
});
