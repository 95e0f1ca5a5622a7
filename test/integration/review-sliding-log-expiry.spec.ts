import fc from 'fast-check';
import type Redis from 'ioredis';
import { type Decision, Limiter, RedisStore } from '../../lib';
import { expiryOffset } from '../../lib/stores/script-reply.util';
import { TestClock } from '../support/backends';
import { createTestClient, uniquePrefix } from '../support/redis';

// Since ad0ec79 a sliding log's expiry only moves later (PEXPIREAT … GT) unless the log held no
// counting member: every write must leave PEXPIRETIME ≥ its newest member + window + offset, or
// members leave early and the log admits more than its limit. Random sequences of spends,
// peeks, refunds, adjustments, resets, restart lockouts and a clock stepped back and forth.

const RUNS = Number(process.env.REDLIMIT_PROPERTY_RUNS ?? 40);

let admin: Redis;
beforeAll(() => {
  admin = createTestClient();
});
afterAll(async () => {
  await admin.quit();
});

const op = fc.oneof(
  fc.record({ consume: fc.integer({ min: 0, max: 2 }), cost: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ advance: fc.integer({ min: -2_500, max: 3_000 }) }),
  fc.record({ refund: fc.nat() }),
  fc.record({ adjust: fc.nat(), to: fc.integer({ min: 0, max: 4 }) }),
  fc.record({ reset: fc.integer({ min: 0, max: 2 }) }),
);

it('every write leaves a log expiring no sooner than its newest member + window (+ offset)', async () => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
      const clock = new TestClock();
      const prefix = `${uniquePrefix('review-slog')}${run++}:`;
      const store = new RedisStore({ client: admin, prefix, clock: clock.read });
      const offset = expiryOffset(clock.read());
      const limiters = [
        new Limiter(store, {
          name: 'two',
          algorithm: 'sliding-log',
          limits: [
            { limit: 4, window: 1_000 },
            { limit: 6, window: 4_000 },
          ],
        }),
        new Limiter(store, {
          name: 'lock',
          algorithm: 'sliding-log',
          limit: 3,
          window: 2_000,
          block: { duration: 1_500 },
        }),
        new Limiter(store, {
          name: 'restart',
          algorithm: 'sliding-log',
          limit: 3,
          window: 3_000,
          block: { duration: 1_000, restart: true },
        }),
      ];
      const windows: Record<string, number> = {
        'two:0': 1_000,
        'two:1': 4_000,
        'lock:0': 2_000,
        'restart:0': 3_000,
      };
      const spent: Array<[Limiter, Decision]> = [];
      for (const o of ops) {
        if ('consume' in o) {
          const l = limiters[o.consume]!;
          const d = await l.consume('k', { cost: Math.min(o.cost, 3) });
          if (d.allowed) spent.push([l, d]);
        } else if ('advance' in o) {
          clock.advance(o.advance);
        } else if ('refund' in o) {
          const pair = spent[o.refund % Math.max(1, spent.length)];
          if (pair) await pair[0].refund(pair[1]);
        } else if ('adjust' in o) {
          const pair = spent[o.adjust % Math.max(1, spent.length)];
          if (pair) await pair[0].adjust(pair[1], Math.min(o.to, 3));
        } else {
          await limiters[o.reset]!.reset('k');
        }
        for (const [suffix, window] of Object.entries(windows)) {
          const key = `${prefix}{k}:${suffix}`;
          const newest = await admin.zrange(key, -1, -1, 'WITHSCORES');
          if (newest.length === 0) continue;
          const expireAt = await admin.pexpiretime(key);
          expect({ key, expireAt }).toEqual({
            key,
            expireAt: expect.any(Number) as number,
          });
          expect(expireAt).toBeGreaterThanOrEqual(Number(newest[1]) + window + offset);
        }
      }
    }),
    { numRuns: RUNS },
  );
});
