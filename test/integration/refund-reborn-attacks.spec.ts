import { type Algorithm, Limiter, MemoryStore, type Receipt } from '../../lib';
import { backends, TestClock } from '../support/backends';

// Since 727e3ad a MemoryStore receipt settles on every limit whose state the spend charged (not
// on none when one limit's state was written again). Sequences that could make a refund create
// budget or refund twice, run on every store: they must agree at every step.

const stores = backends('refund-reborn-attacks');
const copy = (receipt: Receipt): Receipt => JSON.parse(JSON.stringify(receipt)) as Receipt;

type Step = (limiter: Limiter, clock: TestClock, r: Receipt[]) => Promise<unknown>;

const limits = [
  { limit: 10, window: 1_000 },
  { limit: 3, window: 10_000 },
];

/** Runs the steps on a fresh limiter of each store; what each step returns must agree. */
async function agree(
  algorithm: Algorithm,
  steps: Step[],
  rules = limits,
  block?: { duration: number; restart: boolean },
): Promise<void> {
  const seen: Array<{ name: string; out: unknown[] }> = [];
  for (const backend of stores) {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'attack',
      algorithm,
      limits: rules,
      ...(block ? { block } : {}),
    });
    const out: unknown[] = [];
    const receipts: Receipt[] = []; // this store's
    for (const step of steps) out.push(await step(limiter, clock, receipts));
    seen.push({ name: backend.name, out });
  }
  for (const other of seen.slice(1)) expect(other).toEqual({ ...seen[0], name: other.name });
}

const state = async (limiter: Limiter) => {
  const p = await limiter.peek('k');
  return [p.allowed, p.remaining, p.retryAfterMs, p.resetAfterMs];
};

describe.each(['token-bucket', 'gcra', 'fixed-window', 'sliding-window'] as const)(
  '%s',
  (algorithm) => {
    it('a reset between the spend and its refund: the refund gives nothing, on either store', async () => {
      await agree(algorithm, [
        async (l, _, r) => void r.push((await l.consume('k')).receipt),
        (l) => l.consume('k').then((d) => d.remaining),
        (l) => l.reset('k'),
        (l) => l.consume('k').then((d) => d.remaining),
        async (l, c, r) => (c.advance(150), l.refund(r[0]!)),
        state,
        (l, _, r) => l.refund(copy(r[0]!)),
        state,
      ]);
    });

    it('short state emptied and written again, adjust up then refund, and copies: both stores agree', async () => {
      await agree(algorithm, [
        async (l, _, r) => void r.push((await l.consume('k')).receipt),
        async (l, _, r) => void r.push((await l.consume('k')).receipt),
        async (l, c, r) => (c.advance(1_500), l.refund(r[1]!)),
        (l) => l.consume('k').then((d) => [d.allowed, d.remaining]),
        (l, _, r) => l.adjust(r[0]!, 2),
        state,
        (l, _, r) => l.refund(r[0]!),
        state,
        (l, _, r) => l.refund(copy(r[0]!)),
        (l, _, r) => l.adjust(copy(r[0]!), 0),
        state,
      ]);
    });

    it('a short state emptied, then an adjustment up writes it again, then the refund: both stores agree', async () => {
      await agree(
        algorithm,
        [
          async (l, _, r) => void r.push((await l.consume('k')).receipt),
          async (l, _, r) => void r.push((await l.consume('k')).receipt),
          async (l, c, r) => (c.advance(340), l.refund(r[1]!)),
          state,
          (l) => l.consume('x').then((d) => d.allowed), // a later spend, on another key
          (l, _, r) => l.adjust(r[0]!, 3),
          state,
          (l, _, r) => l.refund(r[0]!),
          state,
          async (l, c) => (c.advance(100), state(l)),
        ],
        [
          // The short limit binds here.
          { limit: 3, window: 1_000 },
          { limit: 10, window: 10_000 },
        ],
      );
    });

    it('a lockout that restarts the count between the spend and its refund: both stores agree', async () => {
      await agree(
        algorithm,
        [
          async (l, _, r) => void r.push((await l.consume('k')).receipt),
          async (l, _, r) => void r.push((await l.consume('k')).receipt),
          (l) => l.consume('k').then((d) => [d.allowed, d.retryAfterMs]), // locked out: count gone
          async (l, c, r) => (c.advance(2_000), l.refund(r[0]!)),
          state,
          async (l) => [(await l.consume('k')).allowed, (await l.consume('k')).allowed],
          (l, _, r) => l.refund(r[1]!),
          (l, _, r) => l.adjust(copy(r[0]!), 0),
          state,
        ],
        [{ limit: 2, window: 10_000 }], // (restart takes one limit)
        { duration: 1_000, restart: true },
      );
    });

    it('a clock stepped back between spend, re-creation and refund: both stores agree', async () => {
      await agree(algorithm, [
        async (l, _, r) => void r.push((await l.consume('k')).receipt),
        async (l, c, r) => (c.advance(2_000), void r.push((await l.consume('k')).receipt)),
        async (l, c, r) => (c.advance(-1_900), l.refund(r[1]!)),
        state,
        (l, _, r) => l.refund(r[0]!),
        state,
        (l, _, r) => l.refund(copy(r[0]!)),
        state,
      ]);
    });
  },
);

describe('MemoryStore under maxKeys', () => {
  it.each(['token-bucket', 'fixed-window'] as const)(
    '%s: a copy of a refunded receipt gives nothing while new keys push the caller out',
    async (algorithm) => {
      // New keys push the caller's entries out, oldest first: a spend touches its ledger after
      // its states, so the ledger never goes first and a copy still finds its id.
      const clock = new TestClock();
      const limiter = new Limiter(new MemoryStore({ clock: clock.read, maxKeys: 100 }), {
        name: 'attack',
        algorithm,
        limit: 5,
        window: 60_000,
      });
      const first = await limiter.consume('k');
      expect(await limiter.refund(first)).toBe(true);
      await limiter.consume('k');
      for (let i = 0; i < 98; i++) await limiter.consume(`other:${i}`);
      const before = (await limiter.peek('k')).remaining;
      expect(before).toBe(3); // peek: what a spend now would leave
      await limiter.refund(copy(first.receipt));
      expect((await limiter.peek('k')).remaining).toBe(before);
    },
  );

  it('a short limit pushed out and written again: the refund gives back on the long one only, once', async () => {
    const clock = new TestClock();
    const limiter = new Limiter(new MemoryStore({ clock: clock.read, maxKeys: 100 }), {
      name: 'attack',
      algorithm: 'fixed-window',
      limits,
    });
    const first = await limiter.consume('k');
    await limiter.consume('k');
    // Push out everything of 'k', then spend again: new states on both limits.
    for (let i = 0; i < 120; i++) await limiter.consume(`other:${i}`);
    await limiter.consume('k');
    const before = (await limiter.peek('k')).remaining;
    await limiter.refund(first);
    await limiter.refund(copy(first.receipt));
    expect((await limiter.peek('k')).remaining).toBe(before);
  });

  it('only the short limit pushed out and written again: the refund gives back on the long one, once', async () => {
    const clock = new TestClock();
    const store = new MemoryStore({ clock: clock.read, maxKeys: 100 });
    const limiter = new Limiter(store, { name: 'attack', algorithm: 'fixed-window', limits });
    const others = new Limiter(store, {
      name: 'other',
      algorithm: 'fixed-window',
      limit: 5,
      window: 60_000,
    });
    const first = await limiter.consume('k');
    const second = await limiter.consume('k');
    // Entries: the 1 s state, the 10 s state (no ledger yet); 99 new ones push out the first only.
    for (let i = 0; i < 99; i++) await others.consume(`other:${i}`);
    expect(await limiter.refund(second)).toBe(true); // on the 10 s state (moved up); 1 of 3
    expect((await limiter.consume('k')).allowed).toBe(true); // a new 1 s state; 10 s: 2 of 3
    expect((await limiter.consume('k')).allowed).toBe(true); // 3 of 3
    expect((await limiter.consume('k')).allowed).toBe(false);
    expect(await limiter.refund(first)).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(true); // given back on the 10 s limit
    await limiter.refund(copy(first.receipt));
    expect((await limiter.consume('k')).allowed).toBe(false); // once
  });
});
