/**
 * The second review's lockout findings, kept as a standing set (issue 25, findings 1-4): a
 * forgotten count (lockout `restart`, MemoryStore eviction) makes every earlier receipt of the
 * key refund and adjust nothing; `block` on a concurrency policy, or `restart` on a policy with
 * several limits, is refused at construction; under Redis OOM a `block` refusal is still a
 * refusal.
 */
import Redis from 'ioredis';
import { Limiter, MemoryStore, type PolicyOptions, RedisStore } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { backends, TestClock } from '../support/backends';
import { startRedisServer, type StartedRedisServer, uniquePrefix } from '../support/redis';

const stores = backends('review-lockouts');

const MINUTE = 60_000;

/** 5 per hour; a refusal locks the key out for 1 min and forgets its count. */
const restarting = (algorithm: PolicyOptions['algorithm']): PolicyOptions => ({
  name: `restart-${algorithm}`,
  algorithm,
  limit: 5,
  window: '1h',
  block: { duration: '1m', restart: true },
});

/** `ALGORITHMS` holds the rate algorithms (concurrency refuses `block` at construction). */
const RESTARTABLE = ALGORITHMS;

describe.each(stores)('$name store: a forgotten count', (backend) => {
  let clock: TestClock;
  beforeEach(() => {
    clock = new TestClock();
  });

  it.each(RESTARTABLE)(
    '%s: receipts from before a restart lockout refund nothing (5 in flight, locked out, 5 more, then the 5 refund)',
    async (algorithm) => {
      const limiter = new Limiter(backend.store(clock), restarting(algorithm));
      const inFlight = [];
      for (let i = 0; i < 5; i++) inFlight.push(await limiter.consume('ip:1'));
      expect(inFlight.every((d) => d.allowed)).toBe(true);
      expect((await limiter.consume('ip:1')).allowed).toBe(false); // the lockout starts
      clock.advance(MINUTE);
      for (let i = 0; i < 5; i++) expect((await limiter.consume('ip:1')).allowed).toBe(true);
      // The slow attempts turn out legitimate: their spends were forgotten with the count.
      for (const decision of inFlight) await limiter.refund(decision);
      expect((await limiter.consume('ip:1')).allowed).toBe(false);
    },
  );

  it.each(RESTARTABLE)(
    '%s: an adjustment down of a receipt from before a restart lockout gives nothing back',
    async (algorithm) => {
      const limiter = new Limiter(backend.store(clock), restarting(algorithm));
      const big = await limiter.consume('ip:1', { cost: 5 });
      expect(big.allowed).toBe(true);
      expect((await limiter.consume('ip:1')).allowed).toBe(false); // locked out, count forgotten
      clock.advance(MINUTE);
      expect((await limiter.consume('ip:1', { cost: 5 })).allowed).toBe(true);
      await limiter.adjust(big, 0);
      expect((await limiter.consume('ip:1')).allowed).toBe(false);
    },
  );

  it('a receipt from after the restart lockout still refunds', async () => {
    const limiter = new Limiter(backend.store(clock), restarting('fixed-window'));
    for (let i = 0; i < 5; i++) await limiter.consume('ip:1');
    expect((await limiter.consume('ip:1')).allowed).toBe(false);
    clock.advance(MINUTE);
    const after = await limiter.consume('ip:1');
    await limiter.refund(after);
    expect((await limiter.peek('ip:1')).remaining).toBe(4);
  });

  it('a restart lockout forgets only the key that was locked out: the other key’s receipts still refund', async () => {
    const limiter = new Limiter(backend.store(clock), {
      ...restarting('fixed-window'),
      name: 'two-keys',
      limit: 2,
    });
    const spentB = await limiter.consume('user:b'); // another caller, same policy
    await limiter.consume('ip:1');
    await limiter.consume('ip:1');
    expect((await limiter.consume('ip:1')).allowed).toBe(false);
    await limiter.refund(spentB);
    expect((await limiter.peek('user:b')).remaining).toBe(1);
  });
});

describe.each(stores)('$name store: restart and several limits', (backend) => {
  it('refuses block.restart on a policy with several limits (the longer limits would not hold)', () => {
    const store = backend.store(new TestClock());
    expect(
      () =>
        new Limiter(store, {
          name: 'two-limits',
          algorithm: 'fixed-window',
          limits: [
            { limit: 5, window: '1m' },
            { limit: 20, window: '1h' },
          ],
          block: { duration: '1m', restart: true },
        }),
    ).toThrow(/policy\.block\.restart.*one limit/);
  });

  it('several limits with a lockout but no restart: a caller retrying at each retryAfterMs gets at most 20 an hour', async () => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'minute-hour',
      algorithm: 'fixed-window',
      limits: [
        { limit: 5, window: '1m' },
        { limit: 20, window: '1h' },
      ],
      block: { duration: '1m' },
    });
    let admitted = 0;
    const end = clock.now + 60 * MINUTE;
    while (clock.now < end) {
      const decision = await limiter.consume('ip:1');
      if (decision.allowed) admitted++;
      else clock.advance(Math.max(decision.retryAfterMs, 1));
    }
    expect(admitted).toBe(20);
  });
});

describe.each(stores)('$name store: leases and lockouts', (backend) => {
  it('refuses block on a concurrency policy (a lockout must never free leases still held)', () => {
    const store = backend.store(new TestClock());
    expect(
      () =>
        new Limiter(store, {
          name: 'conc',
          algorithm: 'concurrency',
          limit: 2,
          window: '1m',
          block: { duration: '1s', restart: true },
        }),
    ).toThrow(/policy\.block.*concurrency/);
    expect(
      () =>
        new Limiter(store, {
          name: 'conc',
          algorithm: 'concurrency',
          limit: 2,
          window: '1m',
          block: { duration: '1s' },
        }),
    ).toThrow(/policy\.block.*concurrency/);
  });
});

describe('MemoryStore: eviction under maxKeys', () => {
  it('receipts from before the key was forgotten refund nothing into its fresh state', async () => {
    const clock = new TestClock();
    const store = new MemoryStore({ clock: clock.read, maxKeys: 20 });
    const limiter = new Limiter(store, {
      name: 'evict',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1h',
    });
    const inFlight = [];
    for (let i = 0; i < 5; i++) inFlight.push(await limiter.consume('victim'));
    expect((await limiter.consume('victim')).allowed).toBe(false);
    // A flood of other callers pushes the victim's state out.
    for (let i = 0; i < 100; i++) await limiter.consume(`flood:${i}`);
    // Forgotten: a full budget again (documented).
    for (let i = 0; i < 5; i++) expect((await limiter.consume('victim')).allowed).toBe(true);
    for (const decision of inFlight) await limiter.refund(decision);
    expect((await limiter.consume('victim')).allowed).toBe(false);
  });

  it('receipts of keys that were not forgotten still refund after an eviction', async () => {
    const clock = new TestClock();
    const store = new MemoryStore({ clock: clock.read, maxKeys: 200 });
    const limiter = new Limiter(store, {
      name: 'evict',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1h',
    });
    for (let i = 0; i < 250; i++) await limiter.consume(`flood:${i}`); // evictions
    clock.advance(1);
    const spent = await limiter.consume('fresh');
    await limiter.refund(spent);
    expect((await limiter.peek('fresh')).remaining).toBe(4);
  });
});

describe('RedisStore out of memory: a lockout refusal is still a refusal', () => {
  // A server of its own: out of memory, it would fail every other spec running beside this one.
  let server: StartedRedisServer;
  let admin: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    admin.disconnect();
    await server.stop();
  });

  it.each([
    ['open', { duration: '1m' }],
    ['closed', { duration: '1m' }],
    ['open', { duration: '1m', restart: true }],
  ] as const)(
    'failMode %s, block %j: refused as a refusal (no store failure), and the count is not forgotten without its lockout',
    async (failMode, block) => {
      const client = new Redis(server.url);
      try {
        const failures: unknown[] = [];
        const limiter = new Limiter(
          new RedisStore({ client, prefix: uniquePrefix('oom-block') }),
          { name: 'oom', algorithm: 'fixed-window', limit: 2, window: '1h', block, failMode },
          { onStoreFailure: (failure) => void failures.push(failure) },
        );
        expect((await limiter.consume('k')).allowed).toBe(true);
        expect((await limiter.consume('k')).allowed).toBe(true);
        await admin.config('SET', 'maxmemory-policy', 'noeviction');
        await admin.config('SET', 'maxmemory', '1');
        try {
          for (let i = 0; i < 3; i++) {
            const refused = await limiter.consume('k');
            expect(refused.failure).toBeUndefined();
            expect(refused.allowed).toBe(false);
            expect(refused.retryAfterMs).toBeGreaterThan(0);
          }
          expect(failures).toEqual([]);
        } finally {
          await admin.config('SET', 'maxmemory', '0');
        }
        // The lockout could not be written; neither was the count forgotten (restart).
        expect((await limiter.peek('k')).allowed).toBe(false);
      } finally {
        client.disconnect();
      }
    },
  );
});
