import fc from 'fast-check';
import {
  type Algorithm,
  type Decision,
  Limiter,
  MemoryStore,
  RedisStore,
  type StackedDecision,
  type Store,
} from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { storageKey } from '../../lib/stores/storage-key.util';
import { clusterSlot } from '../../lib/stores/cluster-slot.util';
import { backends, TestClock } from '../support/backends';

const stores = backends('stack', { nodeRedis: true });
const RUNS = Number(process.env.REDLIMIT_PROPERTY_RUNS ?? 40);

/** The three layers of the plans example: per IP for everyone, per plan, per endpoint. */
function layers(store: Store, algorithms: readonly [Algorithm, Algorithm, Algorithm]) {
  return {
    ip: new Limiter(store, { name: 'ip', algorithm: algorithms[0], limit: 5, window: '1m' }),
    plan: new Limiter(store, { name: 'plan', algorithm: algorithms[1], limit: 3, window: '1m' }),
    endpoint: new Limiter(store, {
      name: 'export',
      algorithm: algorithms[2],
      limit: 2,
      window: '1m',
    }),
  };
}

describe.each(stores)('$name store: several policies as one decision', (backend) => {
  describe.each([
    ['fixed-window', 'sliding-window', 'gcra'],
    ['token-bucket', 'sliding-log', 'fixed-window'],
    ['sliding-window', 'gcra', 'sliding-log'],
  ] as const)('%s + %s + %s', (...algorithms) => {
    it('the endpoint refuses the 3rd call, and the refusal leaves the other layers as they were', async () => {
      const { ip, plan, endpoint } = layers(backend.store(new TestClock()), algorithms);
      const call = () =>
        Limiter.consumeAll([
          { limiter: ip, keys: 'ip:203.0.113.7' },
          { limiter: plan, keys: 'key:pro-1' },
          { limiter: endpoint, keys: 'key:pro-1' },
        ]);
      expect((await call()).allowed).toBe(true);
      const second = await call();
      expect(second.decisions.map((d) => d.remaining)).toEqual([3, 1, 0]);
      const third = await call();
      expect(third.allowed).toBe(false);
      expect(third.refusedBy?.policy).toBe('export');
      expect(third.refusedBy?.blockedBy?.key).toBe('key:pro-1');
      expect(third.retryAfterMs).toBe(third.refusedBy?.retryAfterMs);
      expect(third.retryAfterMs).toBeGreaterThan(0);
      expect(third.decisions.map((d) => d.receipt.spent)).toEqual([false, false, false]);
      // The layers that fitted report no wait of their own, and nothing was taken from them.
      expect(third.decisions[0]!.retryAfterMs).toBe(0);
      expect(third.decisions[0]!.blockedBy).toBeUndefined();
      expect((await ip.peek('ip:203.0.113.7')).remaining).toBe(2); // 5 − 2 spent − 1 peeked
      expect((await plan.peek('key:pro-1')).remaining).toBe(0); // 3 − 2 − 1
      // Another endpoint on the same plan still has the plan's last unit.
      expect((await plan.consume('key:pro-1')).allowed).toBe(true);
    });

    it('50 concurrent stacked calls: exactly the tightest layer is admitted, every layer counts them', async () => {
      const { ip, plan, endpoint } = layers(backend.store(), algorithms);
      const parts = [
        { limiter: ip, keys: 'ip:198.51.100.1' },
        { limiter: plan, keys: 'key:free-1' },
        { limiter: endpoint, keys: ['key:free-1', 'ip:198.51.100.1'] },
      ];
      await Limiter.peekAll(parts); // loads the script and measures the clock: no call waits
      // All 50 leave in the same tick, on warmed connections.
      const results = await Promise.all(
        Array.from({ length: 50 }, () => Limiter.consumeAll(parts)),
      );
      expect(results.filter((r) => r.decisions.some((d) => d.failure))).toEqual([]);
      const admitted = results.filter((r) => r.allowed).length;
      expect(admitted).toBe(2);
      expect((await ip.peek('ip:198.51.100.1')).remaining).toBe(5 - admitted - 1);
      expect((await plan.peek('key:free-1')).remaining).toBe(3 - admitted - 1);
      expect((await endpoint.peek('ip:198.51.100.1')).allowed).toBe(false);
    });
  });

  it('charges each part its own cost, and refundAll gives every part back once', async () => {
    const store = backend.store(new TestClock());
    const a = new Limiter(store, { name: 'a', algorithm: 'fixed-window', limit: 10, window: '1h' });
    const b = new Limiter(store, { name: 'b', algorithm: 'sliding-log', limit: 10, window: '1h' });
    const spent = await Limiter.consumeAll([
      { limiter: a, keys: 'k', cost: 4 },
      { limiter: b, keys: ['k', 'j'], cost: 7 },
    ]);
    expect(spent.decisions.map((d) => d.remaining)).toEqual([6, 3]);
    expect(spent.decisions.map((d) => d.receipt.cost)).toEqual([4, 7]);
    expect(await Limiter.refundAll(spent)).toBe(true);
    expect(await Limiter.refundAll(spent)).toBe(false); // once
    expect((await a.peek('k', { cost: 10 })).allowed).toBe(true);
    expect((await b.peek(['k', 'j'], { cost: 10 })).allowed).toBe(true);
  });

  it('a refusal of one part never charges the others, whatever the order of the parts', async () => {
    const store = backend.store(new TestClock());
    const full = new Limiter(store, { name: 'full', algorithm: 'gcra', limit: 1, window: '1h' });
    const open = new Limiter(store, {
      name: 'open',
      algorithm: 'token-bucket',
      limit: 9,
      window: '1h',
    });
    await full.consume('x');
    for (let i = 0; i < 3; i++) {
      const refused = await Limiter.consumeAll([
        { limiter: open, keys: ['x', 'y'] },
        { limiter: full, keys: 'x' },
      ]);
      expect(refused.allowed).toBe(false);
      expect(refused.refusedBy?.policy).toBe('full');
      const reversed = await Limiter.consumeAll([
        { limiter: full, keys: 'x' },
        { limiter: open, keys: 'y' },
      ]);
      expect(reversed.allowed).toBe(false);
    }
    expect((await open.peek(['x', 'y'], { cost: 9 })).allowed).toBe(true);
  });

  /** The backend's store as a store written before stacks: no consumeStack/peekStack. */
  const withoutStacks = (store: Store): Store => ({
    consume: (r) => store.consume(r),
    peek: (r) => store.peek(r),
    refund: (r) => store.refund(r),
    reset: (r) => store.reset(r),
  });

  it.each([
    ['', (s: Store) => s],
    [' (a store without consumeStack: spent part by part, given back on refusal)', withoutStacks],
  ])(
    'behaves exactly like its parts checked one by one, then charged only if all allow%s',
    async (_, wrap) => {
      // Differential: every stacked call on the backend against a MemoryStore shadow where each
      // part is peeked alone and, only if all allow, consumed alone.
      const part = fc.record({
        policy: fc.integer({ min: 0, max: 2 }),
        keys: fc.subarray(['a', 'b', 'c'], { minLength: 1, maxLength: 2 }),
        cost: fc.integer({ min: 1, max: 2 }),
      });
      const step = fc.oneof(
        {
          weight: 4,
          arbitrary: fc.record({ parts: fc.array(part, { minLength: 1, maxLength: 3 }) }),
        },
        { weight: 1, arbitrary: fc.record({ advance: fc.integer({ min: 1, max: 1_500 }) }) },
        { weight: 1, arbitrary: fc.record({ refund: fc.nat() }) },
      );
      const algorithms = fc.tuple(
        fc.constantFrom(...ALGORITHMS),
        fc.constantFrom(...ALGORITHMS),
        fc.constantFrom(...ALGORITHMS),
      );
      await fc.assert(
        fc.asyncProperty(algorithms, fc.array(step, { maxLength: 25 }), async (algos, steps) => {
          const clock = new TestClock();
          const store = wrap(backend.store(clock));
          const shadow = new MemoryStore({ clock: clock.read });
          const policy = (s: Store, i: number) =>
            new Limiter(s, {
              name: `p${i}`,
              algorithm: algos[i]!,
              limits: [
                { limit: 3 + i, window: 1_000 + 300 * i },
                { limit: 5 + i, window: 3_000 },
              ],
            });
          const real = [0, 1, 2].map((i) => policy(store, i));
          const model = [0, 1, 2].map((i) => policy(shadow, i));
          const spends: Array<{ real: StackedDecision; model: Array<[number, Decision]> }> = [];
          for (const s of steps) {
            if ('advance' in s) {
              clock.advance(s.advance);
              continue;
            }
            if ('refund' in s) {
              const spend = spends[s.refund % Math.max(1, spends.length)];
              if (!spend) continue;
              await Limiter.refundAll(spend.real);
              for (const [i, d] of spend.model) await model[i]!.refund(d);
              continue;
            }
            // One part per policy (a policy's keys in one part), as consumeAll requires.
            const byPolicy = new Map<number, { keys: Set<string>; cost: number }>();
            for (const p of s.parts) {
              const entry = byPolicy.get(p.policy) ?? { keys: new Set<string>(), cost: p.cost };
              p.keys.forEach((k) => entry.keys.add(k));
              byPolicy.set(p.policy, entry);
            }
            const chosen = [...byPolicy.entries()];
            const stacked = await Limiter.consumeAll(
              chosen.map(([i, { keys, cost }]) => ({ limiter: real[i]!, keys: [...keys], cost })),
            );
            const peeks = await Promise.all(
              chosen.map(([i, { keys, cost }]) => model[i]!.peek([...keys], { cost })),
            );
            const allowed = peeks.every((d) => d.allowed);
            expect(stacked.allowed).toBe(allowed);
            // A peek answers as if it spent; a refused stack spent nothing on any part.
            expect(stacked.decisions.map((d) => d.remaining)).toEqual(
              peeks.map((d, n) =>
                allowed || !d.allowed ? d.remaining : d.remaining + chosen[n]![1].cost,
              ),
            );
            if (!allowed) {
              const waits = peeks.filter((d) => !d.allowed).map((d) => d.retryAfterMs);
              expect(stacked.retryAfterMs).toBe(Math.max(...waits));
              continue;
            }
            const charged: Array<[number, Decision]> = [];
            for (const [i, { keys, cost }] of chosen) {
              charged.push([i, await model[i]!.consume([...keys], { cost })]);
            }
            spends.push({ real: stacked, model: charged });
          }
        }),
        { numRuns: RUNS },
      );
    },
  );

  it('on Cluster, a refusal stands when a later slot group cannot be peeked', async () => {
    if (backend.name !== 'cluster') return;
    const store = backend.store(new TestClock()) as RedisStore;
    const p1 = new Limiter(store, {
      name: 'p1',
      algorithm: 'fixed-window',
      limit: 1,
      window: '1h',
    });
    const p2 = new Limiter(store, { name: 'p2', algorithm: 'sliding-log', limit: 5, window: '1h' });
    const slot = (key: string, policy: string) =>
      clusterSlot(storageKey(store.prefix, key, policy, 0));
    // Two caller keys in different slots, the refusing one first in slot order.
    const keys = Array.from({ length: 50 }, (_, i) => `k${i}`);
    const a = keys.find((k) => slot(k, 'p1') < slot('zz', 'p2'))!;
    await p1.consume(a);
    const internals = (
      store as unknown as {
        stacks: {
          decide: (requests: unknown, spend: boolean, ...rest: unknown[]) => Promise<unknown>;
        };
      }
    ).stacks;
    const real = internals.decide.bind(internals);
    internals.decide = (requests, spend, ...rest) =>
      spend ? real(requests, spend, ...rest) : Promise.reject(new Error('node unreachable'));
    const refused = await Limiter.consumeAll([
      { limiter: p1, keys: a },
      { limiter: p2, keys: 'zz' },
    ]);
    internals.decide = real;
    expect(refused.decisions.map((d) => d.failure)).toEqual([undefined, undefined]);
    expect(refused.allowed).toBe(false);
    expect(refused.refusedBy?.policy).toBe('p1');
    expect((await p2.peek('zz', { cost: 5 })).allowed).toBe(true); // nothing spent on p2
  });

  it('names the bad part before the store is touched', async () => {
    const store = backend.store();
    const a = new Limiter(store, { name: 'a', algorithm: 'fixed-window', limit: 2, window: '1m' });
    const elsewhere = new Limiter(backend.store(), {
      name: 'b',
      algorithm: 'fixed-window',
      limit: 2,
      window: '1m',
    });
    await expect(Limiter.consumeAll([])).rejects.toThrow(/non-empty array/);
    await expect(Limiter.consumeAll([{ limiter: {} as Limiter, keys: 'k' }])).rejects.toThrow(
      /part 0 needs a Limiter/,
    );
    await expect(
      Limiter.consumeAll([
        { limiter: a, keys: 'k' },
        { limiter: elsewhere, keys: 'k' },
      ]),
    ).rejects.toThrow(/part 1 \('b'\) uses another store/);
    await expect(
      Limiter.consumeAll([
        { limiter: a, keys: ['k', 'j'] },
        { limiter: a, keys: 'j' },
      ]),
    ).rejects.toThrow(/policy 'a' is given key "j" in two parts/);
    await expect(Limiter.consumeAll([{ limiter: a, keys: 'k', cost: 3 }])).rejects.toThrow(
      RangeError,
    );
    expect((await a.peek('j', { cost: 2 })).allowed).toBe(true); // nothing was spent
  });
});
