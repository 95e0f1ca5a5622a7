import { Limiter, type Receipt, RedisStore } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { backends, TestClock } from '../support/backends';

const stores = backends('refunds', { nodeRedis: true });

describe.each(stores)('$name store', (backend) => {
  describe.each(ALGORITHMS)('%s refunds', (algorithm) => {
    const setup = (limit = 2) => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'r',
        algorithm,
        limit,
        window: '1m',
      });
      return { clock, limiter };
    };

    it('gives the spend back', async () => {
      const { limiter } = setup(1);
      const spent = await limiter.consume(['a', 'b']);
      expect(await limiter.refund(spent)).toBe(true);
      expect((await limiter.consume(['a', 'b'])).allowed).toBe(true);
    });

    it('cannot manufacture budget: 1 spend then 10 refunds at limit 2 → exactly 2 more', async () => {
      const { limiter } = setup(2);
      const spent = await limiter.consume('k');
      for (let i = 0; i < 10; i++) await limiter.refund(spent);
      expect((await limiter.consume('k')).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
    });

    it('is idempotent: refunding a decision twice, or it and its receipt, counts once', async () => {
      const { limiter } = setup(3);
      const first = await limiter.consume('k');
      await limiter.consume('k');
      await limiter.consume('k');
      expect(await limiter.refund(first)).toBe(true);
      expect(await limiter.refund(first)).toBe(false);
      expect(await limiter.refund(first.receipt)).toBe(false);
      expect((await limiter.consume('k')).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
    });

    it('applies one of two racing refunds of the same receipt', async () => {
      const { limiter } = setup(2);
      const first = await limiter.consume('k');
      await limiter.consume('k');
      const results = await Promise.all([limiter.refund(first), limiter.refund(first)]);
      expect(results.filter(Boolean)).toHaveLength(1);
      expect((await limiter.consume('k')).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
    });

    it('does nothing for a refused decision', async () => {
      const { limiter } = setup(1);
      await limiter.consume('k');
      const refused = await limiter.consume('k');
      expect(await limiter.refund(refused)).toBe(false);
      expect((await limiter.consume('k')).allowed).toBe(false);
    });

    it('does nothing for a peek', async () => {
      const { limiter } = setup(1);
      await limiter.consume('k');
      expect(await limiter.refund(await limiter.peek('k'))).toBe(false);
      expect((await limiter.consume('k')).allowed).toBe(false);
    });

    it('never creates a key: a refund after reset, or after the window, writes nothing', async () => {
      const clock = new TestClock();
      const store = backend.store(clock);
      const limiter = new Limiter(store, { name: 'r', algorithm, limit: 2, window: '1m' });
      const spent = await limiter.consume('k');
      await limiter.reset('k');
      // (the spend's outcome marker, `{…}!<spend id>`, may still be there: see lost-reply.spec)
      const stored = async () =>
        (await backend.keys!(`${(store as RedisStore).prefix}*`)).filter((k) => !k.includes('}!'));
      const keysAfterReset = store instanceof RedisStore ? await stored() : [];
      await limiter.refund(spent);
      if (store instanceof RedisStore) {
        // Only the ledger noting the reset: no state key, nothing added by the refund.
        expect(await stored()).toEqual(keysAfterReset);
        expect(keysAfterReset.every((key) => key.endsWith(':r'))).toBe(true);
      }
      expect((await limiter.consume('k')).remaining).toBe(1); // from empty, not from below zero

      const late = await limiter.consume('late');
      clock.advance(3_600_000); // every window of that spend has passed
      const before =
        store instanceof RedisStore ? await backend.keys!(`${store.prefix}{late}*`) : [];
      await limiter.refund(late);
      if (store instanceof RedisStore) {
        // (Keys of past windows outlive them in real time under a test clock; the refund adds none.)
        expect(await backend.keys!(`${store.prefix}{late}*`)).toEqual(before);
        expect(before.some((key) => key.endsWith(':r'))).toBe(false);
      }
    });

    it('a copy of a receipt (e.g. through JSON) refunds at most once', async () => {
      const { limiter } = setup(2);
      const a = await limiter.consume(['k', 'j']);
      await limiter.consume(['k', 'j']);
      const copy = (): Receipt => JSON.parse(JSON.stringify(a.receipt)) as Receipt;
      expect(await limiter.refund(copy())).toBe(true);
      await limiter.refund(copy());
      await limiter.refund(a);
      expect((await limiter.consume(['k', 'j'])).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(false);
      expect((await limiter.consume('j')).allowed).toBe(false);
    });

    it('a refund of a spend made before a reset comes off nothing', async () => {
      const { clock, limiter } = setup(2);
      const before = await limiter.consume('k');
      clock.advance(1);
      await limiter.reset('k'); // an admin unlocks the key
      clock.advance(1);
      await limiter.consume('k');
      await limiter.consume('k');
      await limiter.refund(before); // must not take one of the two new spends back
      expect((await limiter.consume('k')).allowed).toBe(false);
    });

    it('in the millisecond of a reset: the spend before it refunds nothing, the one after it refunds', async () => {
      const { limiter } = setup(2);
      const before = await limiter.consume('k');
      await limiter.reset('k'); // same instant: the clock does not move in this test
      const after = await limiter.consume('k');
      await limiter.consume('k');
      expect(await limiter.refund(before)).toBe(true); // sent, and must take nothing
      expect((await limiter.peek('k')).allowed).toBe(false);
      await limiter.refund(after);
      expect((await limiter.peek('k')).remaining).toBe(0);
      expect((await limiter.consume('k')).allowed).toBe(true);
    });

    it('two resets in one millisecond: a spend between them refunds nothing', async () => {
      const { limiter } = setup(2);
      await limiter.reset('k');
      const between = await limiter.consume('k');
      await limiter.reset('k');
      await limiter.consume('k');
      await limiter.consume('k');
      await limiter.refund(between);
      expect((await limiter.peek('k')).allowed).toBe(false);
    });

    it('several keys: a refund gives back on the keys not reset since, and only on those', async () => {
      const { limiter } = setup(2);
      await limiter.reset('a');
      const spent = await limiter.consume(['a', 'b']); // after a's reset, in the same instant
      await limiter.reset('b');
      await limiter.consume('b');
      await limiter.consume('b');
      await limiter.refund(spent);
      expect((await limiter.peek('a')).remaining).toBe(1); // back to full: 2 - the peek's 1
      expect((await limiter.peek('b')).allowed).toBe(false); // the two spends after b's reset stand
    });

    it('gives back a cost above 100 in full (a sliding log writes and removes its members in chunks)', async () => {
      const clock = new TestClock();
      const limiter = new Limiter(backend.store(clock), {
        name: 'big',
        algorithm,
        limit: 300,
        window: '1m',
      });
      await limiter.consume('k', { cost: 7 });
      const spent = await limiter.consume('k', { cost: 250 });
      expect(spent.remaining).toBe(43);
      await limiter.refund(spent);
      expect((await limiter.peek('k', { cost: 293 })).allowed).toBe(true);
      expect((await limiter.peek('k', { cost: 294 })).allowed).toBe(false);
    });

    it('rejects a receipt of another policy', async () => {
      const { limiter } = setup(1);
      const other = new Limiter(backend.store(), {
        name: 'other',
        algorithm,
        limit: 1,
        window: '1m',
      });
      const spent = await other.consume('k');
      await expect(limiter.refund(spent)).rejects.toThrow(RangeError);
    });

    it('after the charged window rolled over, leaves the new window’s spends counted', async () => {
      const { clock, limiter } = setup(2);
      const old = await limiter.consume('k');
      clock.advance(60_000 * 2); // two windows on: the old spend weighs on nothing any more
      await limiter.consume('k');
      await limiter.consume('k');
      await limiter.refund(old);
      expect((await limiter.consume('k')).allowed).toBe(false);
    });
  });

  it('fixed window: a refund after the rollover cannot admit a 3rd call at limit 2', async () => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'fw',
      algorithm: 'fixed-window',
      limit: 2,
      window: '1m',
    });
    clock.advance(59_000);
    const late = await limiter.consume('k');
    clock.advance(1_000); // next window
    await limiter.consume('k');
    await limiter.consume('k');
    await limiter.refund(late);
    expect((await limiter.consume('k')).allowed).toBe(false);
  });

  it('sliding window: a spend refunded in the next window comes off the previous window', async () => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'sw',
      algorithm: 'sliding-window',
      limit: 2,
      window: '1m',
    });
    const a = await limiter.consume('k');
    await limiter.consume('k');
    clock.advance(60_000 + 30_000); // half-way through the next window: prev 2 weighs 1
    expect((await limiter.peek('k')).remaining).toBe(0); // a spend now would fill it
    const b = await limiter.consume('k'); // now cur 1 + prev weight 1 = 2: full
    expect(b.allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(false);
    await limiter.refund(a); // prev 2 → 1 weighs 0.5: one more fits (0.5 + 1 + 1 ≤ 2)? no, 2.5 > 2
    expect((await limiter.peek('k')).allowed).toBe(false);
    clock.advance(1); // still refused at 0.49.. + 2; the refund never touched cur
    expect((await limiter.peek('k')).remaining).toBe(0);
    await limiter.refund(b); // cur 1 → 0: 0.5 + 0 + 1 ≤ 2
    expect((await limiter.consume('k')).allowed).toBe(true);
  });
});
