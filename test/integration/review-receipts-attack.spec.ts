/**
 * Adversarial review of receiptSecret, the ledger's `life` marker and the refusal cache's
 * maxAgeMs: each spec is one attack that got through (each fails until it is fixed).
 */
import {
  Limiter,
  MemoryStore,
  type PolicyOptions,
  type Receipt,
  RedisStore,
  type Store,
} from '../../lib';
import { inspect } from 'node:util';
import { backends, TestClock } from '../support/backends';
import { uniquePrefix } from '../support/redis';

const stores = backends('review-receipts-attack');
const redisBackends = stores.filter((b) => b.name !== 'memory');
const SECRET = 'receipt-secret-of-the-app-0123456789';
const HOUR = 3_600_000;
const copy = (receipt: Receipt): Receipt => JSON.parse(JSON.stringify(receipt)) as Receipt;

/** `store`, whose consume fails while `down.failing`, with a fallback on the same clock. */
function flaky(store: Store, clock: TestClock): { store: Store; down: { failing: boolean } } {
  const down = { failing: false };
  const fallback = new MemoryStore({ clock: clock.read });
  const wrapped = new Proxy(store, {
    get(target, property) {
      if (property === 'fallback') return () => fallback;
      if (property === 'consume' && down.failing) {
        return () => Promise.reject(new Error('store down'));
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, down };
}

describe.each(stores)('$name store: receipt attacks', (backend) => {
  it('fallback flag set to a truthy non-true value (1) keeps the mac valid and routes a store receipt to the in-process fallback: a second refund, over-admission there', async () => {
    const clock = new TestClock();
    const { store, down } = flaky(backend.store(clock), clock);
    const limiter = new Limiter(
      store,
      { name: 'fallback-route', algorithm: 'fixed-window', limit: 3, window: '1h' },
      { failMode: 'memory', receiptSecret: SECRET },
    );
    down.failing = true;
    expect((await limiter.consume('k')).receipt.fallback).toBe(true); // the fallback's state is born
    down.failing = false;
    const onStore = await limiter.consume('k'); // a genuine store receipt (fallback absent)
    expect(onStore.receipt.fallback).toBeUndefined();
    down.failing = true;
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(false); // the fallback is full: 3 of 3
    // The holder edits `fallback` to 1: signed as `fallback === true` (false), routed by truthiness.
    const edited = { ...copy(onStore.receipt), fallback: 1 } as unknown as Receipt;
    await limiter.refund(edited).catch(() => undefined);
    expect((await limiter.consume('k')).allowed).toBe(false);
  });
  it("a fallback receipt (failMode 'memory') from another process, genuine and signed with the shared secret, refunds in this process's fallback, which never charged it: over-admission there", async () => {
    const clock = new TestClock();
    const shared = backend.store(clock);
    const one = flaky(shared, clock); // two processes on one store, each with its own fallback
    const two = flaky(shared, clock);
    const policy: PolicyOptions = {
      name: 'fallback-elsewhere',
      algorithm: 'fixed-window',
      limit: 3,
      window: '1h',
    };
    const first = new Limiter(one.store, policy, { failMode: 'memory', receiptSecret: SECRET });
    const second = new Limiter(two.store, policy, { failMode: 'memory', receiptSecret: SECRET });
    one.down.failing = true;
    two.down.failing = true;
    for (let i = 0; i < 3; i++) expect((await second.consume('k')).allowed).toBe(true);
    expect((await second.consume('k')).allowed).toBe(false); // the second process's fallback: full
    const elsewhere = await first.consume('k'); // charged to the first process's fallback
    expect(elsewhere.receipt.fallback).toBe(true);
    await second.refund(copy(elsewhere.receipt)).catch(() => undefined);
    expect((await second.consume('k')).allowed).toBe(false);
  });
});

describe.each(stores)(
  '$name store: ledger markers × forged spend ids (no receiptSecret)',
  (backend) => {
    it("a forged spendId 'reset' (a ledger marker's name) must not make a genuine earlier receipt refund nothing (MemoryStore refunds it)", async () => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'marker-id',
        algorithm: 'fixed-window',
        limit: 5,
        window: '1h',
      });
      const victim = await limiter.consume('k'); // kept, refunded later
      const other = await limiter.consume('k');
      // (a made-up id refunding a unit is documented without receiptSecret; its name is the attack)
      for (const marker of ['reset', 'floor', 'life', `${other.receipt.spendId}=0`]) {
        await expect(limiter.refund({ ...copy(other.receipt), spendId: marker })).rejects.toThrow(
          /no spendId as a store issues them/,
        );
      }
      expect((await limiter.peek('k')).remaining).toBe(2); // (peek: what a consume would leave)
      await limiter.refund(copy(victim.receipt));
      expect((await limiter.peek('k')).remaining).toBe(3);
    });
  },
);

describe.each(stores)('$name store: ledger life beyond range (no receiptSecret)', (backend) => {
  it("a forged token-bucket receipt whose lifetime (burst × window / limit) is past PEXPIREAT's range must not make the key's genuine refunds fail (MemoryStore refunds them)", async () => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'life-range',
      algorithm: 'token-bucket',
      limit: 5,
      window: '1h',
    });
    const genuine = await limiter.consume('victim');
    const other = await limiter.consume('victim');
    const huge = Number.MAX_SAFE_INTEGER;
    const forged: Receipt = {
      ...copy(other.receipt),
      spendId: 'made-up',
      limits: [{ limit: 1, windowMs: huge, burst: huge }],
    };
    await limiter.adjust(forged, forged.cost).catch(() => undefined); // recorded, nothing charged
    await expect(limiter.refund(copy(genuine.receipt))).resolves.toBe(true);
  });
});

describe.each(redisBackends)('$name store: ledger life and encoding', (backend) => {
  // Without receiptSecret a receipt is a bearer credential (security.md): whoever may hand in
  // edited receipts can make ledgers for any key live as long as the limits it names. With it:
  it('a forged receipt with limits longer than the policy makes no ledger for any key live for ages: with receiptSecret it is refused, and nothing is written', async () => {
    const clock = new TestClock();
    const policy = 'forged-life';
    const limiter = new Limiter(
      backend.store(clock),
      { name: policy, algorithm: 'fixed-window', limit: 5, window: '1h' },
      { receiptSecret: 'receipt-secret-of-the-app-0123456789' },
    );
    const genuine = await limiter.consume('mine');
    const forged: Receipt = {
      ...copy(genuine.receipt),
      keys: ['never-spent'],
      spendId: `${genuine.receipt.spendId}0`,
      limits: [{ limit: 5, windowMs: 2 ** 50, burst: 5 }],
    };
    await expect(limiter.adjust(forged, 1)).rejects.toThrow(/mac does not match/);
    expect(await backend.keys!(`*{never-spent}:${policy}:r`)).toEqual([]);
  });

  it('a full ledger of a key that was reset (124 ids + reset, floor and life markers) stays a listpack', async () => {
    const clock = new TestClock();
    const policy = 'listpack';
    const limiter = new Limiter(backend.store(clock), {
      name: policy,
      algorithm: 'fixed-window',
      limit: 1000,
      window: '1h',
    });
    await limiter.consume('lp');
    await limiter.reset('lp'); // the reset marker
    clock.advance(1);
    for (let i = 0; i < 130; i++) {
      await limiter.refund(await limiter.consume('lp'));
      clock.advance(1);
    }
    const [ledger] = await backend.keys!(`*{lp}:${policy}:r`);
    expect(await backend.client!.zcard(ledger!)).toBe(127);
    expect(await backend.client!.object('ENCODING', ledger!)).toBe('listpack');
  });
});

describe.each(redisBackends)('$name store: refusal cache × clock step back', (backend) => {
  it('a reset in another process reaches a cached refusal within maxAgeMs even after the clock stepped back', async () => {
    const clock = new TestClock();
    const prefix = uniquePrefix('attack-refusal-step');
    const processOf = () =>
      new RedisStore({ client: backend.client!, prefix, clock: clock.read, refusalCache: true });
    const otp: PolicyOptions = { name: 'step', algorithm: 'fixed-window', limit: 2, window: '1m' };
    const a = new Limiter(processOf(), otp);
    const b = new Limiter(processOf(), otp);
    await a.consume('phone');
    await a.consume('phone');
    expect((await a.consume('phone')).allowed).toBe(false); // cached in A for at most 1 s
    clock.advance(-HOUR); // the clock steps back an hour
    await b.reset('phone'); // a support unlock in another process
    clock.advance(1_000); // maxAgeMs (1 s) later, on the store's clock
    const after = await a.consume('phone');
    expect(after.cached).toBeUndefined(); // Redis was asked again
    expect(after.allowed).toBe(true);
  });
});

describe.each(stores)('$name store: receipts × another store (prefix, tenant)', (backend) => {
  it('a genuine receipt charged on one store (prefix) refunds on another store sharing the secret and policy name, which never charged it: over-admission there', async () => {
    const clock = new TestClock();
    const policy: PolicyOptions = {
      name: 'tenant',
      algorithm: 'fixed-window',
      limit: 3,
      window: '1h',
    };
    const tenantA = new Limiter(backend.store(clock), policy, { receiptSecret: SECRET });
    const tenantB = new Limiter(backend.store(clock), policy, { receiptSecret: SECRET });
    for (let i = 0; i < 3; i++) expect((await tenantB.consume('user:1')).allowed).toBe(true);
    expect((await tenantB.consume('user:1')).allowed).toBe(false);
    const spentOnA = await tenantA.consume('user:1');
    await tenantB.refund(copy(spentOnA.receipt)).catch(() => undefined);
    expect((await tenantB.consume('user:1')).allowed).toBe(false);
  });
});

describe('receiptSecret disclosure', () => {
  it('a Limiter logged or serialised (JSON.stringify, util.inspect) does not show its receiptSecret', () => {
    const limiter = new Limiter(
      new MemoryStore(),
      { name: 'logged', algorithm: 'fixed-window', limit: 1, window: '1m' },
      { receiptSecret: SECRET },
    );
    expect(JSON.stringify(limiter)).not.toContain(SECRET);
    expect(inspect(limiter, { depth: 5 })).not.toContain(SECRET);
  });
});
