import {
  type DecisionEvent,
  DecisionEvents,
  Limiter,
  MemoryStore,
  type PolicyOptions,
  type Store,
} from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { clusterSlot } from '../../lib/stores/cluster-slot.util';
import { backends, TestClock } from '../support/backends';

const stores = backends('lockouts');

const MINUTE = 60_000;

/** Two calls per 10 s; a refusal locks the key out for 1 min, then 2, 4, at most 4; forgotten 10 min after. */
const login: PolicyOptions = {
  name: 'login',
  algorithm: 'fixed-window',
  limit: 2,
  window: '10s',
  block: { duration: '1m', factor: 2, max: '4m', forgetAfter: '10m' },
};

/** Spends the key's budget, then the refusal that locks it out; returns that refusal. */
async function exhaust(limiter: Limiter, key: string | string[], calls = 2) {
  for (let i = 0; i < calls; i++) expect((await limiter.consume(key)).allowed).toBe(true);
  return limiter.consume(key);
}

/** Two caller keys in different Cluster slots, the one in the lower slot first. */
function keysInTwoSlots(): [string, string] {
  const [a, b] = ['user:ann', 'user:bob'];
  expect(clusterSlot(`{${a}}`)).not.toBe(clusterSlot(`{${b}}`));
  return clusterSlot(`{${a}}`) < clusterSlot(`{${b}}`) ? [a, b] : [b, a];
}

describe.each(stores)('$name store: lockouts (policy option block)', (backend) => {
  let clock: TestClock;
  let store: Store;
  beforeEach(() => {
    clock = new TestClock();
    store = backend.store(clock);
  });

  it('restart: the lockout forgets the count, so the caller starts over when it ends, within the window', async () => {
    const limiter = new Limiter(store, {
      ...login,
      window: '1h',
      block: { duration: '1m', restart: true },
    });
    const refused = await exhaust(limiter, 'ip:1');
    expect(refused.retryAfterMs).toBe(MINUTE); // the lockout only: the count is gone
    clock.advance(MINUTE - 1);
    expect((await limiter.consume('ip:1')).allowed).toBe(false);
    clock.advance(1);
    // A full budget again, in the same hour-long window; and another lockout after it.
    expect((await exhaust(limiter, 'ip:1')).retryAfterMs).toBe(MINUTE);
    // Without restart, the window keeps refusing after the lockout.
    const plain = new Limiter(store, { ...login, name: 'plain', window: '1h' });
    await exhaust(plain, 'ip:1');
    clock.advance(MINUTE);
    expect((await plain.consume('ip:1')).allowed).toBe(false);
  });

  it('escalates 1, 2, 4 minutes, capped at max, and never during a lockout', async () => {
    const limiter = new Limiter(store, login);
    const expected = [MINUTE, 2 * MINUTE, 4 * MINUTE, 4 * MINUTE];
    for (const duration of expected) {
      const refused = await exhaust(limiter, 'ip:1');
      expect(refused.allowed).toBe(false);
      expect(refused.blockedUntil).toBe(clock.now + duration);
      expect(refused.retryAfterMs).toBe(duration);
      expect(refused.blockedBy?.key).toBe('ip:1');
      // Halfway: refused by the lockout, which does not grow.
      clock.advance(duration / 2);
      const held = await limiter.consume('ip:1');
      expect(held.allowed).toBe(false);
      expect(held.blockedUntil).toBe(refused.blockedUntil);
      expect(held.retryAfterMs).toBe(duration / 2);
      expect(held.remaining).toBe(0);
      // 1 ms before the end still refused; at the end, budget again.
      clock.advance(duration / 2 - 1);
      expect((await limiter.consume('ip:1')).allowed).toBe(false);
      clock.advance(1);
    }
    expect((await limiter.consume('ip:1')).allowed).toBe(true);
  });

  it('forgets the strikes forgetAfter after a lockout ends, not a millisecond earlier', async () => {
    const limiter = new Limiter(store, login);
    await exhaust(limiter, 'ip:1'); // 1 min
    clock.advance(MINUTE + 10 * MINUTE - 1); // 1 ms before the strike is forgotten
    expect((await exhaust(limiter, 'ip:1')).retryAfterMs).toBe(2 * MINUTE);
    clock.advance(2 * MINUTE + 10 * MINUTE); // exactly when it is forgotten
    expect((await exhaust(limiter, 'ip:1')).retryAfterMs).toBe(MINUTE);
  });

  it('locks out the key that refused, not the other key of the call', async () => {
    const limiter = new Limiter(store, login);
    await exhaust(limiter, 'email:a', 2);
    const refused = await limiter.consume(['ip:1', 'email:a']);
    expect(refused.allowed).toBe(false);
    expect(refused.blockedBy?.key).toBe('email:a');
    expect(refused.blockedUntil).toBe(clock.now + MINUTE);
    // ip:1 fitted: neither charged nor locked out.
    expect((await limiter.peek('ip:1')).remaining).toBe(1);
    expect((await limiter.consume('ip:1')).allowed).toBe(true);
    clock.advance(20_000); // the 10 s window is over: only the lockout refuses
    const held = await limiter.peek('email:a');
    expect(held.allowed).toBe(false);
    expect(held.blockedUntil).toBe(refused.blockedUntil);
    expect(held.retryAfterMs).toBe(MINUTE - 20_000);
  });

  it('50 concurrent calls over the limit start one lockout, not fifty escalations', async () => {
    const limiter = new Limiter(store, login);
    await exhaust(limiter, 'ip:1', 2).then((d) => expect(d.allowed).toBe(false));
    await limiter.reset('ip:1');
    await exhaust(limiter, 'ip:1', 2).then((d) => expect(d.retryAfterMs).toBe(MINUTE));
    clock.advance(MINUTE);
    for (let i = 0; i < 2; i++) await limiter.consume('ip:1');
    const all = await Promise.all(Array.from({ length: 50 }, () => limiter.consume('ip:1')));
    expect(all.every((d) => !d.allowed)).toBe(true);
    expect(new Set(all.map((d) => d.blockedUntil))).toEqual(new Set([clock.now + 2 * MINUTE]));
    clock.advance(2 * MINUTE);
    expect((await exhaust(limiter, 'ip:1')).retryAfterMs).toBe(4 * MINUTE); // the third strike
  });

  it('a refund does not lift a lockout; reset lifts it and forgets the strikes', async () => {
    const limiter = new Limiter(store, login);
    const first = await limiter.consume('ip:1');
    await limiter.consume('ip:1');
    expect((await limiter.consume('ip:1')).blockedUntil).toBe(clock.now + MINUTE);
    await limiter.refund(first);
    const held = await limiter.consume('ip:1');
    expect(held.allowed).toBe(false);
    expect(held.blockedUntil).toBe(clock.now + MINUTE);
    await limiter.reset('ip:1');
    expect((await limiter.consume('ip:1')).allowed).toBe(true);
    expect((await limiter.consume('ip:1')).allowed).toBe(true);
    expect((await limiter.consume('ip:1')).retryAfterMs).toBe(MINUTE); // strike 1 again
  });

  it('a peek reports the lockout a consume would start, and starts none', async () => {
    const limiter = new Limiter(store, login);
    for (let i = 0; i < 2; i++) await limiter.consume('ip:1');
    const peeked = await limiter.peek('ip:1');
    expect(peeked.allowed).toBe(false);
    expect(peeked.blockedUntil).toBe(clock.now + MINUTE);
    expect(peeked.retryAfterMs).toBe(MINUTE);
    clock.advance(10_000); // the window is over, and no lockout was written
    expect((await limiter.consume('ip:1')).allowed).toBe(true);
  });

  it('allowed decisions carry no blockedUntil; policies without block never lock out', async () => {
    const limiter = new Limiter(store, login);
    expect((await limiter.consume('ip:1')).blockedUntil).toBeUndefined();
    const plain = new Limiter(store, { ...login, name: 'plain', block: undefined });
    await exhaust(plain, 'ip:1');
    const refused = await plain.consume('ip:1');
    expect(refused.blockedUntil).toBeUndefined();
    expect(refused.retryAfterMs).toBe(10_000);
    clock.advance(10_000);
    expect((await plain.consume('ip:1')).allowed).toBe(true);
  });

  it('reports outcome blocked to decision events', async () => {
    const events = new DecisionEvents();
    const seen: DecisionEvent[] = [];
    events.on((e) => seen.push(e));
    const limiter = new Limiter(store, login, { events });
    await exhaust(limiter, 'ip:1');
    await limiter.peek('ip:1');
    expect(seen.map((e) => `${e.operation}:${e.outcome}`)).toEqual([
      'consume:allowed',
      'consume:allowed',
      'consume:blocked',
      'peek:blocked',
    ]);
  });

  it.each(ALGORITHMS)('%s: the refusal locks out, the lockout ends on time', async (algorithm) => {
    const limiter = new Limiter(store, { ...login, name: `p-${algorithm}`, algorithm });
    const refused = await exhaust(limiter, 'ip:1');
    expect(refused.allowed).toBe(false);
    expect(refused.blockedUntil).toBe(clock.now + MINUTE);
    expect(refused.retryAfterMs).toBe(MINUTE);
    expect(refused.resetAfterMs).toBeGreaterThanOrEqual(MINUTE);
    clock.advance(MINUTE - 1);
    expect((await limiter.consume('ip:1')).allowed).toBe(false);
    clock.advance(1);
    expect((await limiter.consume('ip:1')).allowed).toBe(true);
  });

  it('locks out every key out of budget, in whichever slot it lives', async () => {
    const limiter = new Limiter(store, login);
    const [first, second] = keysInTwoSlots();
    await exhaust(limiter, first, 2);
    await exhaust(limiter, second, 2);
    clock.advance(20_000); // budgets are back; the keys stay locked out for 40 s more
    expect((await limiter.consume(first)).retryAfterMs).toBe(40_000);
    await limiter.reset([first, second]);
    for (let i = 0; i < 2; i++) await limiter.consume([first, second]);
    const refused = await limiter.consume([first, second]);
    expect(refused.allowed).toBe(false);
    expect(refused.blockedUntil).toBe(clock.now + MINUTE);
    clock.advance(10_000);
    for (const key of [first, second]) {
      const held = await limiter.peek(key);
      expect(held.allowed).toBe(false);
      expect(held.blockedUntil).toBe(refused.blockedUntil);
    }
  });

  it('a key in a later slot that refuses leaves the fitting key unlocked and uncharged', async () => {
    const limiter = new Limiter(store, login);
    const [first, second] = keysInTwoSlots();
    await exhaust(limiter, second, 2);
    const refused = await limiter.consume([first, second]);
    expect(refused.allowed).toBe(false);
    expect(refused.blockedBy?.key).toBe(second);
    expect(refused.blockedUntil).toBe(clock.now + MINUTE);
    expect((await limiter.peek(first)).remaining).toBe(1);
  });

  it('a lockout refusal names the refusing key with its own limit (as Cluster slot groups do)', async () => {
    // fast-check found it: both keys wait 1.5 s (a for the lockout, b for the hour's budget); a
    // refuses (the first key), and it is a's limit that binds, not b's.
    const [a, b] = keysInTwoSlots();
    const limiter = new Limiter(store, {
      name: 'two-limits',
      algorithm: 'fixed-window',
      limits: [
        { limit: 3, window: 500 },
        { limit: 4, window: 1_500 },
      ],
      block: { duration: 1_500 },
    });
    await limiter.consume(a);
    await limiter.consume([a, b]);
    await limiter.consume([b, 'c'], { cost: 2 });
    const refused = await limiter.consume([a, b], { cost: 2 });
    expect(refused.allowed).toBe(false);
    expect(refused.blockedBy).toEqual({ key: a, limit: 3, windowMs: 500 });
  });

  describe('in a stack (consumeAll)', () => {
    it('locks out the refusing part’s key; the other parts are neither charged nor locked', async () => {
      const perIp = new Limiter(store, { ...login, name: 'ip', limit: 5 });
      const account = new Limiter(store, login);
      const call = () =>
        Limiter.consumeAll([
          { limiter: perIp, keys: 'ip:1' },
          { limiter: account, keys: 'email:a' },
        ]);
      await call();
      await call();
      const refused = await call();
      expect(refused.allowed).toBe(false);
      expect(refused.refusedBy?.policy).toBe('login');
      expect(refused.refusedBy?.blockedUntil).toBe(clock.now + MINUTE);
      expect(refused.retryAfterMs).toBe(MINUTE);
      expect(refused.decisions[0]!.blockedUntil).toBeUndefined();
      expect((await perIp.peek('ip:1')).remaining).toBe(2);
      clock.advance(10_000);
      expect((await perIp.consume('ip:1')).allowed).toBe(true);
      expect((await account.consume('email:a')).blockedUntil).toBe(clock.now + 50_000);
    });

    it('a part without block that refuses locks nothing out', async () => {
      const perIp = new Limiter(store, { ...login, name: 'ip', limit: 1, block: undefined });
      const account = new Limiter(store, login);
      const call = () =>
        Limiter.consumeAll([
          { limiter: perIp, keys: 'ip:1' },
          { limiter: account, keys: 'email:a' },
        ]);
      await call();
      const refused = await call();
      expect(refused.allowed).toBe(false);
      expect(refused.refusedBy?.policy).toBe('ip');
      expect(refused.decisions.every((d) => d.blockedUntil === undefined)).toBe(true);
      expect((await account.peek('email:a')).allowed).toBe(true);
    });
  });
});

describe('policy option block: validation', () => {
  const base: PolicyOptions = { name: 'p', algorithm: 'fixed-window', limit: 1, window: '1s' };
  const store = new MemoryStore();
  it.each([
    [{ duration: undefined }, /policy\.block\.duration is required/],
    [{ duration: '1m', factor: 0.5 }, /policy\.block\.factor must be a number from 1 to 100/],
    [{ duration: '1m', factor: Number.NaN }, /policy\.block\.factor/],
    [
      { duration: '1m', max: '30s' },
      /policy\.block\.max .* must be at least policy\.block\.duration/,
    ],
    [{ duration: '400d' }, /policy\.block\.duration must be at most 366 days/],
    [
      { duration: '1m', forgetAfter: 'soon' },
      /policy\.block\.forgetAfter must be a positive duration/,
    ],
    [{ duration: '1m', escalate: true }, /policy\.block: 'escalate' is not a field/],
    [{ duration: '1m', restart: 'yes' }, /policy\.block\.restart must be true or false/],
  ])('%j is refused before any store is touched', (block, message) => {
    expect(
      () => new Limiter(store, { ...base, block: block as unknown as PolicyOptions['block'] }),
    ).toThrow(message);
  });

  it('an unknown policy field is refused, naming it', () => {
    expect(
      () => new Limiter(store, { ...base, blockDuration: '1m' } as unknown as PolicyOptions),
    ).toThrow(/policy 'p': 'blockDuration' is not a field/);
    expect(
      () =>
        new Limiter(store, {
          name: 'p',
          algorithm: 'fixed-window',
          limits: [{ limit: 1, window: '1s', windw: '1m' }],
        } as unknown as PolicyOptions),
    ).toThrow(/policy\.limits\[0\]: 'windw' is not a field/);
  });
});

describe('MemoryStore: lockouts under a flood of new keys', () => {
  it('a caller hammering while locked out keeps its lockout when maxKeys evicts', async () => {
    const clock = new TestClock();
    const limiter = new Limiter(new MemoryStore({ clock: clock.read, maxKeys: 20 }), {
      ...login,
      limit: 1,
      window: '1h',
      block: { duration: '1h' },
    });
    await limiter.consume('attacker');
    const locked = await limiter.consume('attacker');
    expect(locked.blockedUntil).toBe(clock.now + 3_600_000);
    for (let i = 0; i < 100; i++) {
      clock.advance(1);
      expect((await limiter.consume('attacker')).blockedUntil).toBe(locked.blockedUntil);
      expect((await limiter.consume(`new-${i}`)).allowed).toBe(true);
    }
  });
});
