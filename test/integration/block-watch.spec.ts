/**
 * `block: { duration: 0 }`: a policy that starts no lockout, and honours the lockouts another
 * limiter of its name wrote on its keys (RedlimitThrottlerStorage's `blockDuration: 0` beside a
 * blocking route sharing a budget). Redis, Cluster and MemoryStore alike.
 */
import { Limiter, type PolicyOptions } from '../../lib';
import { resolvePolicy } from '../../lib/core/policy';
import { backends, TestClock } from '../support/backends';

const stores = backends('block-watch');

const shared = { name: 'shared', algorithm: 'fixed-window', limit: 3, window: '1m' } as const;
const locking: PolicyOptions = { ...shared, block: { duration: '5m', restart: true } };
const watching: PolicyOptions = { ...shared, block: { duration: 0 } };

describe.each(stores)('$name store: block duration 0', (backend) => {
  it('honours the lockout another limiter of its name started (whose restart forgot the count), and starts none of its own', async () => {
    const clock = new TestClock();
    const store = backend.store(clock);
    const locker = new Limiter(store, locking);
    const watcher = new Limiter(store, watching);
    for (let i = 0; i < 3; i++) expect((await watcher.consume('k')).allowed).toBe(true);
    // The watcher's own refusal: no lockout, the window's wait only.
    const own = await watcher.consume('k');
    expect(own.allowed).toBe(false);
    expect(own.blockedUntil).toBeUndefined();
    // The locking limiter refuses too and locks the key out, forgetting the shared count.
    const locked = await locker.consume('k');
    expect(locked.blockedUntil).toBeGreaterThan(0);
    // The count is gone, but the watcher honours the lockout (it let the caller through before).
    for (let i = 0; i < 4; i++) {
      const call = await watcher.consume('k');
      expect(call.allowed).toBe(false);
      expect(call.blockedUntil).toBe(locked.blockedUntil);
    }
    // Once the lockout ends, the shared budget is whole again for both.
    clock.advance(5 * 60_000);
    expect((await watcher.consume('k')).allowed).toBe(true);
  });

  it('a watching policy alone is a plain limit: refused until the window frees, nothing locked', async () => {
    const clock = new TestClock();
    const watcher = new Limiter(backend.store(clock), { ...watching, name: 'alone' });
    for (let i = 0; i < 3; i++) expect((await watcher.consume('k')).allowed).toBe(true);
    for (let i = 0; i < 5; i++) {
      const refused = await watcher.consume('k');
      expect(refused.allowed).toBe(false);
      expect(refused.blockedUntil).toBeUndefined();
    }
    clock.advance(60_000);
    expect((await watcher.consume('k')).allowed).toBe(true);
  });
});

describe('block duration 0: validation', () => {
  it('takes 0 (no restart), and still refuses other durations below 1 ms', () => {
    expect(resolvePolicy(watching).block?.durationMs).toBe(0);
    expect(() => resolvePolicy({ ...shared, block: { duration: 0, restart: true } })).toThrow(
      /restart needs a duration/,
    );
    expect(() => resolvePolicy({ ...shared, block: { duration: -1 } })).toThrow(/duration/);
    expect(() => resolvePolicy({ ...shared, block: { duration: '0s' } })).toThrow(/duration/);
  });
});
