/**
 * The second review's receipt findings, kept as a standing set (issue 25, finding 12): a refund
 * trusts the limits its receipt names only for where to give back, never for how much of the
 * ledger it may forget.
 */
import { Limiter, type Receipt } from '../../lib';
import { backends, TestClock } from '../support/backends';

const stores = backends('review-receipts');
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
