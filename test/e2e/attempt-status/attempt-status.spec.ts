/**
 * Issue 26, finding 3: `refundOn: 'success'` must not refund a failure the handler reports by its
 * status code. Over HTTP, success is "the handler returned and the status it set is below 400";
 * a `refundOn` function is given that status.
 */
import type { Redis } from 'ioredis';
import type { AttemptOutcome } from '../../../lib/nest';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { attemptStatusApp, CODE } from './attempt-status.app';

describe.each(PLATFORMS)('@Attempt refundOn and the response status on %s', (platform) => {
  let client: Redis;
  let app: RunningApp;
  let outcomes: AttemptOutcome[];
  let phones = 0;
  const phone = () => `+1555000${platform.length}${++phones}`;

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    outcomes = [];
    app = await startApp(
      attemptStatusApp(client, uniquePrefix('e2e-attempt-status'), outcomes),
      platform,
    );
  });
  afterEach(() => app.close());

  const guess = async (path: string, body: { phone: string; code: string }) =>
    (await app.request(path, { method: 'POST', body })).status;

  it('8 wrong OTP guesses answered 401 through @Res({ passthrough: true }) at limit 3: 3 reach the handler, 5 get 429', async () => {
    const to = phone();
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      statuses.push(await guess('/otp/verify', { phone: to, code: String(100000 + i) }));
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429, 429, 429, 429]);
  });

  it('right codes (200) are refunded: ten in a row at limit 3 all pass', async () => {
    const to = phone();
    for (let i = 0; i < 10; i++)
      expect(await guess('/otp/verify', { phone: to, code: CODE })).toBe(200);
  });

  it('a status below 400 (303) is success, 403 is not', async () => {
    const to = phone();
    for (let i = 0; i < 5; i++) {
      expect(await guess('/otp/verify-redirect', { phone: to, code: CODE })).toBe(303);
    }
    const wrong = [];
    for (let i = 0; i < 4; i++)
      wrong.push(await guess('/otp/verify-redirect', { phone: to, code: '1' }));
    expect(wrong).toEqual([403, 403, 403, 429]);
  });

  it('a refundOn function is given the status the handler set', async () => {
    const to = phone();
    expect(await guess('/otp/verify-fn', { phone: to, code: '1' })).toBe(422);
    expect(await guess('/otp/verify-fn', { phone: to, code: CODE })).toBe(201);
    expect(outcomes).toEqual([
      { ok: true, result: { ok: false }, status: 422 },
      { ok: true, result: { ok: true }, status: 201 },
    ]);
    // One guess kept (422), one refunded (201): two left of three.
    expect(await guess('/otp/verify-fn', { phone: to, code: '1' })).toBe(422);
    expect(await guess('/otp/verify-fn', { phone: to, code: '1' })).toBe(422);
    expect(await guess('/otp/verify-fn', { phone: to, code: '1' })).toBe(429);
  });
});
