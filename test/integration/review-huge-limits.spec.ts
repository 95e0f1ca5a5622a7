import type Redis from 'ioredis';
import { type Algorithm, Limiter, MemoryStore, RedisStore } from '../../lib';
import { TestClock } from '../support/backends';
import { createTestClient, uniquePrefix } from '../support/redis';

// Limits sent as one text ('L;limit,window,burst;…') and parsed with %d+ patterns: limits,
// windows and bursts near 2^53 must read back exactly (no exponent form, no lost digits).

let admin: Redis;
beforeAll(() => {
  admin = createTestClient();
});
afterAll(async () => {
  await admin.quit();
});

const cases: Array<[Algorithm, { limit: number; window: number; burst?: number }]> = [
  ['fixed-window', { limit: 2 ** 52, window: 1 }],
  ['sliding-window', { limit: 2 ** 40, window: 4_000 }],
  ['token-bucket', { limit: 1, window: 2 ** 51, burst: 2 }],
  ['sliding-log', { limit: 3, window: 2 ** 51 }],
  ['gcra', { limit: 3, window: 2 ** 50, burst: 7 }],
  ['token-bucket', { limit: 2 ** 52, window: 1 }],
  ['fixed-window', { limit: 1, window: 31_622_400_000 }],
];

it.each(cases)('%s %j: RedisStore answers as MemoryStore', async (algorithm, limit) => {
  const seen: unknown[] = [];
  for (const make of [
    (c: TestClock) => new MemoryStore({ clock: c.read }),
    (c: TestClock) =>
      new RedisStore({ client: admin, prefix: uniquePrefix('huge'), clock: c.read }),
  ]) {
    const clock = new TestClock();
    const limiter = new Limiter(make(clock), {
      name: 'huge',
      algorithm,
      limits: [limit, { limit: 5, window: 1_000 }],
      block: { duration: 1_000 },
    });
    const out: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      const d = await limiter.consume('k', { cost: 1 });
      out.push([d.allowed, d.remaining, d.retryAfterMs, d.resetAfterMs, d.limit, d.blockedUntil]);
      clock.advance(150);
    }
    seen.push(out);
  }
  expect(seen[1]).toEqual(seen[0]);
});
