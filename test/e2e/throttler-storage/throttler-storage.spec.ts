import type { Redis } from 'ioredis';
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
});
