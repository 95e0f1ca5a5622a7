/**
 * Adversarial review 3 of the Nest changes since 5b3c45a: what got through, as failing specs.
 */
import type { Redis } from 'ioredis';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { reviewAttackApp } from './review-nest-attack.app';

describe.each(PLATFORMS)(
  'review attack: @Attempt refundOn and a status set late on %s',
  (platform) => {
    let client: Redis;
    let app: RunningApp;
    let phones = 0;
    const phone = () => `+1555111${platform.length}${++phones}`;

    beforeAll(async () => {
      client = createTestClient();
      await warmPool(client);
    });
    afterAll(() => client.quit());
    beforeEach(async () => {
      app = await startApp(reviewAttackApp(client, uniquePrefix('e2e-review-attack')), platform);
    });
    afterEach(() => app.close());

    it('8 wrong OTP guesses answered 401 through @Res() after the handler returned, at limit 3: the 4th on get 429', async () => {
      const to = phone();
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) {
        const response = await app.request('/otp/late', {
          method: 'POST',
          body: { phone: to, code: String(100000 + i) },
        });
        statuses.push(response.status);
      }
      expect(statuses).toEqual([401, 401, 401, 429, 429, 429, 429, 429]);
    });
  },
);
