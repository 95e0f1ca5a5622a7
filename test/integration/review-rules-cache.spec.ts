import type Redis from 'ioredis';
import { type LimitRule, MemoryStore, RedisStore, type SpendRequest, type Store } from '../../lib';
import { TestClock } from '../support/backends';
import { createTestClient, uniquePrefix } from '../support/redis';

// RedisStore builds a decision's limits text once per limits array (a WeakMap keyed on the
// array). `Store.consume(request)` is public and takes any request: a caller that keeps one
// mutable limits array and changes it between calls must be judged on the limits it sends now,
// as MemoryStore judges it.

let admin: Redis;
beforeAll(() => {
  admin = createTestClient();
});
afterAll(async () => {
  await admin.quit();
});

function stores(): Array<[string, Store]> {
  const clock = new TestClock();
  return [
    ['memory', new MemoryStore({ clock: clock.read })],
    [
      'redis',
      new RedisStore({ client: admin, prefix: uniquePrefix('rules-cache'), clock: clock.read }),
    ],
  ];
}

describe('a limits array changed between calls (public Store API)', () => {
  it('a rule replaced in place: RedisStore judges on the new limit, as MemoryStore', async () => {
    const out: Record<string, boolean[]> = {};
    for (const [name, store] of stores()) {
      const limits: LimitRule[] = [{ limit: 5, windowMs: 60_000, burst: 5 }];
      const request: SpendRequest = {
        policy: 'p',
        algorithm: 'fixed-window',
        limits,
        keys: ['k'],
        cost: 1,
      };
      const seen = [(await store.consume(request)).allowed];
      limits[0] = { limit: 1, windowMs: 60_000, burst: 1 }; // tightened
      seen.push((await store.consume(request)).allowed);
      out[name] = seen;
    }
    expect(out.memory).toEqual([true, false]);
    expect(out.redis).toEqual(out.memory); // fails: Redis still judges on limit 5
  });

  it('a limit added to the array: RedisStore judges both limits (and keeps its keys apart)', async () => {
    const out: Record<string, unknown[]> = {};
    for (const [name, store] of stores()) {
      const limits: LimitRule[] = [{ limit: 5, windowMs: 60_000, burst: 5 }];
      const request: SpendRequest = {
        policy: 'p',
        algorithm: 'sliding-window',
        limits,
        keys: ['k'],
        cost: 1,
      };
      const seen: unknown[] = [(await store.consume(request)).allowed];
      limits.push({ limit: 1, windowMs: 60_000, burst: 1 });
      for (let i = 0; i < 2; i++) {
        const r = await store.consume(request).then(
          (d) => [d.allowed, d.limitIndex],
          (e: Error) => e.message,
        );
        seen.push(r);
      }
      out[name] = seen;
    }
    expect(out.redis).toEqual(out.memory);
  });

  it('the same array with a block object changed in place: RedisStore reads the lockout sent now', async () => {
    const out: Record<string, unknown[]> = {};
    for (const [name, store] of stores()) {
      const limits: LimitRule[] = [{ limit: 1, windowMs: 60_000, burst: 1 }];
      const block = {
        durationMs: 10_000,
        factor: 1,
        maxMs: 86_400_000,
        forgetAfterMs: 86_400_000,
        restart: false,
      };
      const request: SpendRequest = {
        policy: 'p',
        algorithm: 'fixed-window',
        limits,
        keys: ['k'],
        cost: 1,
        block,
      };
      const seen: unknown[] = [];
      seen.push((await store.consume(request)).allowed);
      block.durationMs = 30_000; // a longer lockout from now on
      const refused = await store.consume(request);
      seen.push(refused.allowed, refused.blockedUntil, refused.retryAfterMs);
      out[name] = seen;
    }
    expect(out.redis).toEqual(out.memory);
  });

  it('a limit removed from the array: RedisStore writes no limit state into the ledger key', async () => {
    const out: Record<string, unknown[]> = {};
    const prefix = uniquePrefix('rules-cache-pop');
    const clock = new TestClock();
    const pairs: Array<[string, Store]> = [
      ['memory', new MemoryStore({ clock: clock.read })],
      ['redis', new RedisStore({ client: admin, prefix, clock: clock.read })],
    ];
    for (const [name, store] of pairs) {
      const limits: LimitRule[] = [
        { limit: 5, windowMs: 60_000, burst: 5 },
        { limit: 3, windowMs: 60_000, burst: 3 },
      ];
      const request: SpendRequest = {
        policy: 'p',
        algorithm: 'fixed-window',
        limits,
        keys: ['k'],
        cost: 1,
        settles: true,
      };
      const seen: unknown[] = [(await store.consume(request)).allowed];
      limits.pop();
      for (let i = 0; i < 2; i++) {
        seen.push(
          await store.consume(request).then(
            (d) => [d.allowed, d.remaining],
            (e: Error) => e.message,
          ),
        );
      }
      out[name] = seen;
    }
    expect(out.redis).toEqual(out.memory);
    expect(['none', 'zset']).toContain(await admin.type(`${prefix}{k}:p:r`));
  });
});
