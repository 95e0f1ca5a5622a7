import {
  type Decision,
  type DecisionEvent,
  DecisionEvents,
  Limiter,
  MemoryStore,
  type PolicyOptions,
  type RedisStore,
  type SpendRequest,
  type Store,
  type StoreFailure,
} from '../../lib';
import { storageKey } from '../../lib/stores/storage-key.util';
import { type Backend, backends, TestClock } from '../support/backends';

const stores = backends('shadow');

const account: PolicyOptions = {
  name: 'account',
  algorithm: 'sliding-window',
  limit: 2,
  window: '1m',
  shadow: true,
};

describe.each(stores)('$name store: shadow mode', (backend) => {
  let clock: TestClock;
  let store: Store;
  beforeEach(() => {
    clock = new TestClock();
    store = backend.store(clock);
  });

  it('a refusal is let through as shadowRefused, and spends nothing', async () => {
    const reported: Decision[] = [];
    const limiter = new Limiter(store, account, { onShadowRefusal: (d) => reported.push(d) });
    await limiter.consume('email:a');
    await limiter.consume('email:a');
    const third = await limiter.consume('email:a');
    expect(third).toMatchObject({
      allowed: true,
      shadowRefused: true,
      retryAfterMs: 0,
      remaining: 0,
    });
    expect(third.blockedBy?.key).toBe('email:a');
    expect(third.receipt.spent).toBe(false);
    expect(reported).toEqual([third]);
    // Two spends, not three: 90 s on, the previous window weighs half (1 unit), so one more fits
    // (with three spent, 1.5 would weigh and it would not).
    clock.advance(90_000);
    const later = await limiter.peek('email:a');
    expect(later.allowed).toBe(true);
    expect(later.shadowRefused).toBeUndefined();
    const allowed = await limiter.consume('email:a');
    expect(allowed.shadowRefused).toBeUndefined();
    expect(allowed.receipt.spent).toBe(true);
  });

  it('attempt() runs the body when only a shadow policy refused', async () => {
    const limiter = new Limiter(store, { ...account, limit: 1 }, { onShadowRefusal: () => {} });
    await limiter.consume('email:a');
    await expect(
      limiter.attempt('email:a', (attempt) => Promise.resolve(attempt.decision.shadowRefused)),
    ).resolves.toBe(true);
  });

  it('reports shadow-refused to decision events, for consumes and peeks', async () => {
    const events = new DecisionEvents();
    const seen: DecisionEvent[] = [];
    events.on((e) => seen.push(e));
    const limiter = new Limiter(
      store,
      { ...account, limit: 1 },
      { events, onShadowRefusal: () => {} },
    );
    await limiter.consume('email:a');
    await limiter.consume('email:a');
    await limiter.peek('email:a');
    expect(seen.map((e) => `${e.operation}:${e.outcome}`)).toEqual([
      'consume:allowed',
      'consume:shadow-refused',
      'peek:shadow-refused',
    ]);
  });

  it('with block: the lockout is written, and reported as shadow refusals', async () => {
    const limiter = new Limiter(
      store,
      { ...account, limit: 1, block: { duration: '5m' } },
      { onShadowRefusal: () => {} },
    );
    await limiter.consume('email:a');
    const refused = await limiter.consume('email:a');
    expect(refused).toMatchObject({
      allowed: true,
      shadowRefused: true,
      blockedUntil: clock.now + 300_000,
    });
    clock.advance(120_000); // the budget is back, the lockout is not
    expect(await limiter.consume('email:a')).toMatchObject({ allowed: true, shadowRefused: true });
  });

  describe('in a stack (consumeAll)', () => {
    const perIp: PolicyOptions = { name: 'ip', algorithm: 'fixed-window', limit: 3, window: '1h' };

    it('only a shadow part refuses: the other parts are decided and spent without it', async () => {
      const ip = new Limiter(store, perIp);
      const acct = new Limiter(store, account, { onShadowRefusal: () => {} });
      const call = () =>
        Limiter.consumeAll([
          { limiter: ip, keys: 'ip:1' },
          { limiter: acct, keys: 'email:a' },
        ]);
      await call();
      await call();
      const third = await call();
      expect(third.allowed).toBe(true);
      expect(third.refusedBy).toBeUndefined();
      expect(third.decisions[0]!).toMatchObject({ allowed: true, remaining: 0 });
      expect(third.decisions[0]!.receipt.spent).toBe(true);
      expect(third.decisions[1]!).toMatchObject({ allowed: true, shadowRefused: true });
      expect(third.decisions[1]!.receipt.spent).toBe(false);
      expect((await ip.peek('ip:1')).allowed).toBe(false); // 3 of 3 spent

      const fourth = await call(); // now the enforced part refuses too
      expect(fourth.allowed).toBe(false);
      expect(fourth.refusedBy?.policy).toBe('ip');
      expect(fourth.decisions[1]!).toMatchObject({ allowed: false, shadowRefused: true });
    });

    it('an enforced part refusing refuses the stack, whatever the shadow parts say', async () => {
      const ip = new Limiter(store, { ...perIp, limit: 1 });
      const acct = new Limiter(store, account, { onShadowRefusal: () => {} });
      const call = () =>
        Limiter.consumeAll([
          { limiter: ip, keys: 'ip:1' },
          { limiter: acct, keys: 'email:a' },
        ]);
      await call();
      const second = await call();
      expect(second.allowed).toBe(false);
      expect(second.refusedBy?.policy).toBe('ip');
      expect(second.decisions[1]!.shadowRefused).toBeUndefined();
      expect((await acct.peek('email:a')).remaining).toBe(0); // 1 spent, the peek's 1 more fits
    });
  });
});

/**
 * A store that fails on key 'down' and answers on every other key: on Redis a key of the wrong
 * type under the policy's state (every script that reads it errors, stacks included); MemoryStore
 * cannot fail, so there a store of its own that rejects every call naming 'down'.
 */
async function failingOnDown(
  backend: Backend,
  clock: TestClock,
  policies: string[],
): Promise<Store> {
  const store = backend.store(clock);
  if (backend.name === 'memory') {
    const names = (requests: readonly SpendRequest[]) =>
      requests.some((r) => r.keys.includes('down'));
    const down = () => Promise.reject(new Error('store down'));
    const memory = store as MemoryStore;
    return {
      consume: (r) => (names([r]) ? down() : memory.consume(r)),
      peek: (r) => (names([r]) ? down() : memory.peek(r)),
      consumeStack: (rs) => (names(rs) ? down() : memory.consumeStack(rs)),
      peekStack: (rs) => (names(rs) ? down() : memory.peekStack(rs)),
      refund: (r) => memory.refund(r),
      reset: (r) => memory.reset(r),
      fallback: () => memory.fallback(),
    };
  }
  const { prefix } = store as RedisStore;
  for (const policy of policies) {
    await backend.client!.sadd(storageKey(prefix, 'down', policy, 0), 'not a rate-limit state');
  }
  return store;
}

describe.each(stores)('$name store: shadow mode on a failing store refuses nothing', (backend) => {
  let clock: TestClock;
  beforeEach(() => {
    clock = new TestClock();
  });

  it.each(['closed', undefined] as const)(
    'fail mode %s: the failure is reported and the call admitted, as shadowRefused',
    async (failMode) => {
      const store = await failingOnDown(backend, clock, ['account']);
      const failures: StoreFailure[] = [];
      const shadowed: Decision[] = [];
      const limiter = new Limiter(
        store,
        { ...account, ...(failMode && { failMode }) },
        {
          onStoreFailure: (failure) => failures.push(failure),
          onShadowRefusal: (decision) => shadowed.push(decision),
        },
      );
      const decision = await limiter.consume('down');
      expect(decision).toMatchObject({ allowed: true, shadowRefused: true, retryAfterMs: 0 });
      expect(decision.failure).toMatchObject({ reason: 'error', failMode: 'closed' });
      expect(decision.receipt.spent).toBe(false);
      expect(failures).toHaveLength(1);
      expect(shadowed).toEqual([decision]);
      expect(await limiter.peek('down')).toMatchObject({ allowed: true, shadowRefused: true });
      await expect(limiter.attempt('down', () => 'ran')).resolves.toBe('ran');
      await expect(limiter.begin('down')).resolves.toBeDefined();
      expect((await limiter.waitFor('down', { maxWaitMs: 0 })).allowed).toBe(true);
      // The store still decides other keys as usual.
      expect(await limiter.consume('up')).toMatchObject({ allowed: true, remaining: 1 });
    },
  );

  it('decision events say shadow-refused, with the failure', async () => {
    const store = await failingOnDown(backend, clock, ['account']);
    const events = new DecisionEvents();
    const seen: DecisionEvent[] = [];
    events.on((e) => seen.push(e));
    const limiter = new Limiter(store, account, {
      events,
      onStoreFailure: () => {},
      onShadowRefusal: () => {},
    });
    await limiter.consume('down');
    expect(seen).toMatchObject([
      { operation: 'consume', outcome: 'shadow-refused', failure: 'error' },
    ]);
  });

  it('in a stack: a shadow part never refuses; the enforced parts follow their fail modes', async () => {
    const store = await failingOnDown(backend, clock, ['account', 'ip']);
    const acct = new Limiter(store, account, {
      onStoreFailure: () => {},
      onShadowRefusal: () => {},
    });
    const quiet = { onStoreFailure: () => {} };
    const open = new Limiter(
      store,
      { name: 'ip', algorithm: 'fixed-window', limit: 3, window: '1h', failMode: 'open' },
      quiet,
    );
    const closed = new Limiter(
      store,
      { name: 'ip', algorithm: 'fixed-window', limit: 3, window: '1h' },
      quiet,
    );

    const alone = await Limiter.consumeAll([{ limiter: acct, keys: 'down' }]);
    expect(alone.allowed).toBe(true);
    expect(alone.decisions[0]!).toMatchObject({ allowed: true, shadowRefused: true });

    const withOpen = await Limiter.consumeAll([
      { limiter: open, keys: 'down' },
      { limiter: acct, keys: 'down' },
    ]);
    expect(withOpen.allowed).toBe(true);
    expect(withOpen.decisions[1]!).toMatchObject({ allowed: true, shadowRefused: true });

    const withClosed = await Limiter.consumeAll([
      { limiter: acct, keys: 'down' },
      { limiter: closed, keys: 'down' },
    ]);
    expect(withClosed.allowed).toBe(false);
    expect(withClosed.refusedBy?.policy).toBe('ip'); // the enforced part, never the shadow one
    expect(withClosed.refusedBy?.failure?.failMode).toBe('closed');
  });
});

describe('shadow mode: reporting and validation', () => {
  it('warns at most once per limiter every 10 s by default, with the count', async () => {
    const warnings: string[] = [];
    const spy = jest
      .spyOn(process, 'emitWarning')
      .mockImplementation((warning: string | Error) => void warnings.push(String(warning)));
    try {
      const limiter = new Limiter(new MemoryStore(), { ...account, limit: 1 });
      for (let i = 0; i < 5; i++) await limiter.consume('email:a');
      expect(warnings).toEqual([
        "redlimit: policy 'account' is in shadow mode and let through 1 refusal since its last report",
      ]);
    } finally {
      spy.mockRestore();
    }
  });

  it('shadow must be a boolean', () => {
    expect(
      () =>
        new Limiter(new MemoryStore(), { ...account, shadow: 'yes' } as unknown as PolicyOptions),
    ).toThrow(/policy\.shadow must be true or false; got "yes"/);
  });
});
