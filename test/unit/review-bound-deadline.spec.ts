/**
 * The store call bounded by the request's own deadline (Deadlines.bound): a store that answers or
 * fails after the caller was answered, in each fail mode; no phantom spends, one event and one
 * failure report per decision, no unhandled rejection.
 */
import { DecisionEvents, Limiter, MemoryStore } from '../../lib';
import type { SpendRequest, SpendResult } from '../../lib/core/store';
import { Deadlines } from '../../lib/core/deadlines';

/** A MemoryStore whose consume is held until released (then decided, or failed). */
class GatedStore extends MemoryStore {
  gates: Array<{ go: (then?: () => void) => void; fail: (e: Error) => void }> = [];
  refunds = 0;
  override consume(request: SpendRequest): Promise<SpendResult> {
    return new Promise((resolve, reject) => {
      this.gates.push({
        go: (then) => {
          void super.consume(request).then(resolve, reject);
          then?.(); // after the spend, before its reply is read
        },
        fail: reject,
      });
    });
  }
  override refund(...args: Parameters<MemoryStore['refund']>) {
    this.refunds++;
    return super.refund(...args);
  }
}

const policy = { name: 'p', algorithm: 'fixed-window' as const, limit: 3, window: '1h' };
const settle = () => new Promise((r) => setImmediate(r));

describe('a store call answered after the deadline', () => {
  it.each(['open', 'closed', 'memory'] as const)(
    'failMode %s: a late allowed spend is given back; one event and one failure report each',
    async (failMode) => {
      const store = new GatedStore();
      const events = new DecisionEvents();
      const seen: string[] = [];
      events.on((e) => seen.push(e.outcome));
      const failures: string[] = [];
      const limiter = new Limiter(store, policy, {
        timeoutMs: 5,
        failMode,
        events,
        onStoreFailure: (f) => failures.push(f.reason),
      });
      const decisions = await Promise.all([limiter.consume('k'), limiter.consume('k')]);
      expect(decisions.every((d) => d.failure?.reason === 'timeout')).toBe(true);
      for (const g of store.gates) g.go();
      await settle();
      await settle();
      expect(store.refunds).toBe(2);
      // As untouched: a peek on a fresh store answers the same remaining.
      const request = limiter.decider.request('k', {});
      expect((await store.peek(request)).remaining).toBe(
        (await new MemoryStore().peek(request)).remaining,
      );
      expect(seen).toHaveLength(2);
      expect(failures).toEqual(['timeout', 'timeout']);
    },
  );

  it('a store that rejects after the timeout: no unhandled rejection, the decision stands', async () => {
    const store = new GatedStore();
    const unhandled: unknown[] = [];
    const on = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', on);
    try {
      const limiter = new Limiter(store, policy, { timeoutMs: 5, failMode: 'closed' });
      const d = await limiter.consume('k');
      expect(d.allowed).toBe(false);
      store.gates[0]!.fail(new Error('late boom'));
      await settle();
      await settle();
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', on);
    }
  });

  it.each(['open', 'closed', 'memory'] as const)(
    'failMode %s: a late allowed spend whose refund throws at once is reported to onStoreFailure, not left an unhandled rejection',
    async (failMode) => {
      // A store whose refund throws synchronously instead of rejecting: here a MemoryStore whose
      // custom clock broke between the spend and the refund (its refund reads the clock before
      // it returns a promise); a hand-written Store may do the same.
      let broken = false;
      const store = new GatedStore({ clock: () => (broken ? Number.NaN : Date.now()) });
      const unhandled: unknown[] = [];
      const on = (e: unknown) => unhandled.push(e);
      process.on('unhandledRejection', on);
      const failures: string[] = [];
      try {
        const limiter = new Limiter(store, policy, {
          timeoutMs: 5,
          failMode,
          onStoreFailure: (f) => failures.push(f.reason),
        });
        const d = await limiter.consume('k');
        expect(d.failure?.reason).toBe('timeout');
        // The spend lands after the caller was answered; its refund then throws.
        store.gates[0]!.go(() => (broken = true));
        await settle();
        await settle();
        expect(store.refunds).toBe(1);
        expect(unhandled).toEqual([]);
        expect(failures).toEqual(['timeout', 'error']);
      } finally {
        process.off('unhandledRejection', on);
      }
    },
  );

  it('Deadlines.bound: a deadline earlier than one queued waits for it (queue order), never fails early', async () => {
    const deadlines = new Deadlines(30);
    const order: string[] = [];
    const handler = {
      value: (s: string) => s,
      error: (s: string) => {
        order.push(s);
        return s;
      },
      late: () => undefined,
    };
    const never = new Promise<string>(() => undefined);
    const a = deadlines.bound(never, handler, 'a', true);
    const b = deadlines.bound(never, handler, 'b', true, 0); // a deadline long past
    await Promise.all([a, b]);
    expect(order).toEqual(['a', 'b']);
  });
});
