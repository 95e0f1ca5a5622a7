/**
 * The second review's receipt findings, kept as a standing set (issue 25, findings 11 and 12): with
 * `receiptSecret`, a receipt is authenticated, so a forged or edited one (a made-up spend id,
 * another key) is refused before the store is touched; a refund trusts the limits its receipt
 * names only for where to give back, never for how much of the ledger it may forget.
 */
import { Limiter, type PolicyOptions, type Receipt } from '../../lib';
import { backends, TestClock } from '../support/backends';

const stores = backends('review-receipts');
const ALGORITHM_CASES = ['fixed-window', 'sliding-window', 'token-bucket'] as const;
const copy = (receipt: Receipt): Receipt => JSON.parse(JSON.stringify(receipt)) as Receipt;

describe.each(stores)('$name store: receipts and the ledger', (backend) => {
  it('a receipt naming a shorter window (an older configuration, or edited) prunes no live ledger id: a refunded spend stays refunded', async () => {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'ledger-life',
      algorithm: 'fixed-window',
      limit: 3,
      window: '2h',
    });
    clock.advance(10);
    const a = await limiter.consume('k');
    await limiter.refund(a);
    clock.advance(3_600_010); // more than an hour later, in the same two-hour window
    await limiter.consume('k');
    await limiter.consume('k');
    const last = await limiter.consume('k'); // full: 3 of 3
    // Refunded under one-hour limits (whose window ends with the two-hour one): its own first
    // refund, which gives back; it must not make the ledger forget `a`, refunded over an hour ago.
    const shortLived: Receipt = {
      ...copy(last.receipt),
      limits: last.receipt.limits.map((rule) => ({ ...rule, windowMs: 3_600_000 })),
    };
    await limiter.refund(shortLived);
    // A copy of the first receipt, refunded long ago, must still give nothing back.
    await limiter.refund(copy(a.receipt));
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(false);
  });
});

const SECRET = 'receipt-secret-of-the-app-0123456789';
const otp: PolicyOptions = { name: 'otp', algorithm: 'fixed-window', limit: 5, window: '1h' };

describe.each(stores)('$name store: authenticated receipts (receiptSecret)', (backend) => {
  const setup = (secret: string | undefined = SECRET) => {
    const clock = new TestClock();
    const store = backend.store(clock);
    const limiter = new Limiter(store, otp, secret === undefined ? {} : { receiptSecret: secret });
    return { clock, store, limiter };
  };
  const exhaust = async (limiter: Limiter, key: string) => {
    for (let i = 0; i < 5; i++) expect((await limiter.consume(key)).allowed).toBe(true);
    expect((await limiter.consume(key)).allowed).toBe(false);
  };

  it('a JSON copy of a genuine receipt refunds (once)', async () => {
    const { limiter } = setup();
    const spent = await limiter.consume('k');
    expect(typeof spent.receipt.mac).toBe('string');
    await limiter.refund(copy(spent.receipt));
    await limiter.refund(copy(spent.receipt));
    expect((await limiter.peek('k')).remaining).toBe(4);
  });

  it.each(ALGORITHM_CASES)(
    '%s: forged spend ids refund nothing: refused before the store is touched',
    async (algorithm) => {
      const clock = new TestClock();
      const limiter = new Limiter(
        backend.store(clock),
        { ...otp, name: `forge-${algorithm}`, algorithm },
        { receiptSecret: SECRET },
      );
      const spent = await limiter.consume('k');
      for (let i = 0; i < 4; i++) await limiter.consume('k');
      expect((await limiter.consume('k')).allowed).toBe(false);
      for (let i = 0; i < 5; i++) {
        const forged: Receipt = {
          ...copy(spent.receipt),
          spendId: `${spent.receipt.spendId}x${i}`,
        };
        await expect(limiter.refund(forged)).rejects.toThrow(
          /refund\(\): the receipt's mac does not match/,
        );
      }
      expect((await limiter.consume('k')).allowed).toBe(false);
    },
  );

  it('a receipt moved to another key, or given another cost, instant or limits, is refused', async () => {
    const { limiter } = setup();
    await exhaust(limiter, 'victim');
    const spent = await limiter.consume('mine');
    const edits: Array<Partial<Receipt>> = [
      { keys: ['victim'] },
      { cost: 5 },
      { at: spent.receipt.at + 1 },
      { limits: [{ limit: 5, windowMs: 7_200_000, burst: 5 }] },
      { resetMarks: [0] },
      { mac: undefined },
    ];
    for (const edit of edits) {
      await expect(limiter.refund({ ...copy(spent.receipt), ...edit })).rejects.toThrow(
        /the receipt's mac does not match/,
      );
      await expect(limiter.adjust({ ...copy(spent.receipt), ...edit }, 0)).rejects.toThrow(
        /adjust\(\): the receipt's mac does not match/,
      );
    }
    expect((await limiter.consume('victim')).allowed).toBe(false);
  });

  it('a receipt signed with another secret is refused; one without a secret has no mac', async () => {
    const { store, limiter } = setup();
    const other = new Limiter(store, otp, { receiptSecret: `${SECRET}-other` });
    const spent = await other.consume('k');
    await expect(limiter.refund(copy(spent.receipt))).rejects.toThrow(/mac does not match/);
    const plain = new Limiter(store, otp);
    expect((await plain.consume('k')).receipt.mac).toBeUndefined();
  });

  it.each([
    ['', /receiptSecret must be a string of at least 16 characters; got 0/],
    ['short', /receiptSecret must be a string of at least 16 characters; got 5/],
    [42, /receiptSecret must be a string of at least 16 characters; got a number/],
  ])('refuses receiptSecret %p, never echoing it', (secret, error) => {
    const { store } = setup(undefined);
    expect(() => new Limiter(store, otp, { receiptSecret: secret as string })).toThrow(error);
  });
});
