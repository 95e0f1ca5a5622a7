/**
 * Adversarial review 3: RedlimitThrottlerStorage promises one count per (throttler, key, ttl),
 * whatever each call's limit and blockDuration. Calls of one key whose blockDuration differs
 * (0 on one route, 2 minutes on another; or a blockDuration resolved per request) must share it.
 */
import type { Redis } from 'ioredis';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { count, PLATFORMS, type RunningApp, startApp, statuses } from '../support/app';
import { throttlerBlockApp } from './throttler-block.app';

describe.each(PLATFORMS)(
  'review attack: RedlimitThrottlerStorage and blockDuration varying per call on %s',
  (platform) => {
    let client: Redis;
    let app: RunningApp;
    beforeAll(async () => {
      client = createTestClient();
      await warmPool(client);
    });
    afterAll(() => client.quit());
    beforeEach(async () => {
      app = await startApp(throttlerBlockApp(client, uniquePrefix('e2e-review-block')), platform);
    });
    afterEach(() => app.close());

    const path = (i: number) => (i % 2 ? '/shared/plain' : '/shared/blocking');

    // The blocking limiter's restart forgets the shared count when its lockout starts; a call
    // with blockDuration 0 must honour that lockout (it let 10 of 5 through when it did not).
    it('20 requests in turn on the two routes of one shared budget of 5: 5 get through', async () => {
      const seen: number[] = [];
      for (let i = 0; i < 20; i++) seen.push((await app.request(path(i))).status);
      expect(count(seen, 200)).toBe(5);
    });

    it('50 concurrent requests on the two routes of one shared budget of 5: at most 5 get through', async () => {
      const seen = await statuses(Array.from({ length: 50 }, (_, i) => app.request(path(i))));
      expect(count(seen, 200)).toBeLessThanOrEqual(5);
    });
  },
);
