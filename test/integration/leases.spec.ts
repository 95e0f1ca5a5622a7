import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { type Decision, Limiter, MemoryStore, RateLimitedError } from '../../lib';
import { backends, TestClock } from '../support/backends';
import { redisUrl, uniquePrefix } from '../support/redis';

const stores = backends('leases');

describe.each(stores)('$name store: concurrency leases', (backend) => {
  const setup = (limit = 3, window = '30s', clock: TestClock | undefined = new TestClock()) => {
    const limiter = new Limiter(backend.store(clock), {
      name: 'inflight',
      algorithm: 'concurrency',
      limit,
      window,
    });
    return { clock: clock, limiter };
  };

  it('admits `limit` leases; the next waits for the earliest lease to expire (an upper bound)', async () => {
    const { clock, limiter } = setup();
    await limiter.consume('k');
    clock.advance(1_000);
    await limiter.consume('k');
    await limiter.consume('k');
    const refused = await limiter.consume('k');
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBe(29_000); // the first lease's expiry
    clock.advance(28_999);
    expect((await limiter.consume('k')).allowed).toBe(false);
    clock.advance(1);
    expect((await limiter.consume('k')).allowed).toBe(true);
  });

  it('a release frees the slot at once; releasing twice, or a copy of the receipt, frees nothing more', async () => {
    const { limiter } = setup(2);
    const first = await limiter.consume('k');
    await limiter.consume('k');
    expect(await limiter.release(first)).toBe(true);
    expect(await limiter.release(first)).toBe(false);
    const copy = JSON.parse(JSON.stringify(first.receipt)) as Decision['receipt'];
    expect(await limiter.release(copy)).toBe(true); // sent; the store removes nothing
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(false);
  });

  it('several keys and several units: every key holds the lease, a release frees it on all', async () => {
    const { limiter } = setup(4);
    const keys = ['user:1', 'org:9', 'ip:203.0.113.7'];
    const lease = await limiter.consume(keys, { cost: 3 });
    expect(lease.allowed).toBe(true);
    expect((await limiter.consume('org:9', { cost: 2 })).allowed).toBe(false);
    await limiter.release(lease);
    for (const key of keys) expect((await limiter.consume(key, { cost: 4 })).allowed).toBe(true);
  });

  it('extend renews a held lease for another window; an expired one is not brought back', async () => {
    const { clock, limiter } = setup(1, '10s');
    const lease = await limiter.consume('k');
    clock.advance(9_000);
    expect(await limiter.extend(lease)).toBe(true);
    clock.advance(9_000); // 18 s after it was taken: held thanks to the renewal
    expect((await limiter.consume('k')).allowed).toBe(false);
    clock.advance(1_000); // 10 s after the renewal: expired
    expect(await limiter.extend(lease)).toBe(false); // not brought back
    const next = await limiter.consume('k');
    expect(next.allowed).toBe(true);
    expect(await limiter.extend(lease)).toBe(false); // the slot is someone else's now
    await limiter.release(lease); // the old lease's release leaves the new one alone
    expect((await limiter.consume('k')).allowed).toBe(false);
    await limiter.release(next);
    expect((await limiter.consume('k')).allowed).toBe(true);
  });

  it('an attempt always releases its lease when it settles, refund() or not, thrown or not', async () => {
    const { limiter } = setup(1);
    await limiter.attempt('k', () => 'done');
    await expect(
      limiter.attempt('k', () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const attempt = await limiter.begin('k');
    expect(attempt.leased).toBe(true);
    expect(await attempt.extend()).toBe(true);
    await expect(limiter.begin('k')).rejects.toThrow(RateLimitedError);
    await attempt.settle();
    expect((await limiter.consume('k')).allowed).toBe(true);
  });

  it('stacks with a rate limit in one decision; releaseAll frees the lease and keeps the rate spend', async () => {
    const store = backend.store(new TestClock());
    const inFlight = new Limiter(store, {
      name: 'inflight',
      algorithm: 'concurrency',
      limit: 1,
      window: '30s',
    });
    const perMinute = new Limiter(store, {
      name: 'per-minute',
      algorithm: 'fixed-window',
      limit: 2,
      window: '1m',
    });
    const parts = [
      { limiter: inFlight, keys: 'user:1' },
      { limiter: perMinute, keys: 'user:1' },
    ];
    const first = await Limiter.consumeAll(parts);
    expect(first.allowed).toBe(true);
    const busy = await Limiter.consumeAll(parts);
    expect(busy.refusedBy?.policy).toBe('inflight');
    expect(await Limiter.releaseAll(first)).toBe(true);
    const second = await Limiter.consumeAll(parts); // the 2nd of 2 per minute
    expect(second.allowed).toBe(true);
    await Limiter.releaseAll(second);
    // The lease is free, the rate spends were kept: now the rate limit refuses.
    expect((await inFlight.peek('user:1')).allowed).toBe(true);
    expect((await Limiter.consumeAll(parts)).refusedBy?.policy).toBe('per-minute');
  });

  it('100 concurrent attempts at limit 5 whose bodies take a few ms: never more than 5 run at once, and every lease is released', async () => {
    const { limiter } = setup(5, '30s', undefined);
    await limiter.peek('warm'); // connections open before the race
    let running = 0;
    let most = 0;
    let ran = 0;
    const outcomes = await Promise.allSettled(
      Array.from({ length: 100 }, (_, i) =>
        limiter.attempt('shared', async () => {
          running += 1;
          most = Math.max(most, running);
          ran += 1;
          await new Promise((resolve) => setTimeout(resolve, 2 + (i % 4)));
          running -= 1;
        }),
      ),
    );
    expect(most).toBeLessThanOrEqual(5);
    expect(most).toBeGreaterThanOrEqual(1);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(ran);
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(refused.every((o) => o.reason instanceof RateLimitedError)).toBe(true);
    // All released: five can be taken again at once.
    const again = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('shared')));
    expect(again.every((d) => d.allowed)).toBe(true);
  });
});

describe('concurrency leases: validation', () => {
  it('one limit only; no adjust; extend only for concurrency', async () => {
    expect(
      () =>
        new Limiter(new MemoryStore(), {
          name: 'x',
          algorithm: 'concurrency',
          limits: [
            { limit: 3, window: '30s' },
            { limit: 10, window: '1m' },
          ],
        }),
    ).toThrow(/a concurrency policy has one limit/);
    const leases = new Limiter(new MemoryStore(), {
      name: 'x',
      algorithm: 'concurrency',
      limit: 3,
      window: '30s',
    });
    await expect(leases.adjust(await leases.consume('k'), 2)).rejects.toThrow(
      /release or extend a lease/,
    );
    const rate = new Limiter(new MemoryStore(), {
      name: 'r',
      algorithm: 'fixed-window',
      limit: 3,
      window: '30s',
    });
    await expect(rate.extend(await rate.consume('k'))).rejects.toThrow(
      /only concurrency leases are extended/,
    );
  });
});

describe('concurrency leases: extend on the Redis clock', () => {
  it('pushes the key’s expiry to a window after the renewal, so the renewed lease outlives its first window', async () => {
    // Every other lease spec runs on a TestClock, whose keys never expire in real time.
    const { client } = stores[0]!; // the single Redis
    const { RedisStore } = await import('../../lib');
    const { storageKey } = await import('../../lib/stores/storage-key.util');
    const store = new RedisStore({ client: client!, prefix: uniquePrefix('leases-extend') });
    const limiter = new Limiter(store, {
      name: 'inflight',
      algorithm: 'concurrency',
      limit: 1,
      window: 5_000,
    });
    const lease = await limiter.consume('k');
    expect(lease.allowed).toBe(true);
    const key = storageKey(store.prefix, 'k', 'inflight', 0);
    const member = lease.receipt.spendId!;
    expect(Number(await client!.zscore(key, member))).toBe(lease.receipt.at);
    await new Promise((resolve) => setTimeout(resolve, 50)); // the renewal is a later instant
    expect(await limiter.extend(lease)).toBe(true);
    const renewedAt = Number(await client!.zscore(key, member)); // the extend script's `now`
    expect(renewedAt).toBeGreaterThan(lease.receipt.at);
    // Exactly one window after the renewal (not the first window's end: the key, and with it
    // the renewed lease, would vanish while the lease is still held).
    expect(await client!.pexpiretime(key)).toBe(renewedAt + 5_000);
  });
});

describe('concurrency leases: a process killed while holding leases', () => {
  it('frees them after the window, on the Redis clock', async () => {
    const prefix = uniquePrefix('leases-killed');
    const root = path.resolve(__dirname, '..', '..');
    const register = require.resolve('ts-node/register/transpile-only', { paths: [root] });
    const child = spawn(
      process.execPath,
      ['-r', register, path.join(__dirname, 'fixtures', 'lease-holder.ts')],
      {
        cwd: root,
        env: {
          ...process.env,
          REDLIMIT_TEST_REDIS_URL: redisUrl(),
          LEASE_PREFIX: prefix,
          LEASE_LIMIT: '3',
          LEASE_WINDOW_MS: '1500',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const held = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(out.trim());
      });
      child.on('exit', (code) => reject(new Error(`the lease holder exited (${code}) first`)));
    });
    expect(held).toBe('held 3');
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));

    const { client } = stores[0]!; // the single Redis
    const { RedisStore } = await import('../../lib');
    const limiter = new Limiter(new RedisStore({ client: client!, prefix }), {
      name: 'leases',
      algorithm: 'concurrency',
      limit: 3,
      window: 1_500,
    });
    const refused = await limiter.consume('shared');
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(1_500);
    // Waiting for a turn gets a lease once the dead process's leases expire.
    const turn = await limiter.waitFor('shared', { maxWaitMs: 10_000 });
    expect(turn.allowed).toBe(true);
  }, 20_000);
});
