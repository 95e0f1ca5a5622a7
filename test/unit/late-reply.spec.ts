import {
  Limiter,
  MemoryStore,
  type RefundRequest,
  type SpendRequest,
  type SpendResult,
  type Store,
} from '../../lib';
import { TestClock } from '../support/backends';

/** A store whose spends happen at once but whose replies arrive `delayMs` later. */
class SlowRepliesStore implements Store {
  constructor(
    readonly inner: Store,
    private readonly delayMs: number,
  ) {}
  async consume(request: SpendRequest): Promise<SpendResult> {
    const result = await this.inner.consume(request); // spent now
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    return result;
  }
  peek(request: SpendRequest): Promise<SpendResult> {
    return this.inner.peek(request);
  }
  refund(request: RefundRequest): Promise<void> {
    return this.inner.refund(request);
  }
  reset(request: Parameters<Store['reset']>[0]): Promise<void> {
    return this.inner.reset(request);
  }
}

describe('a spend that ran in time but whose reply came after timeoutMs', () => {
  it.each(['fixed-window', 'token-bucket', 'sliding-log'] as const)(
    '%s: is refunded, so the caller told "failed" was not charged',
    async (algorithm) => {
      const clock = new TestClock();
      const inner = new MemoryStore({ clock: clock.read });
      const limiter = new Limiter(
        new SlowRepliesStore(inner, 80),
        { name: 'p', algorithm, limit: 2, window: '1h' },
        { timeoutMs: 20, onStoreFailure: () => undefined },
      );
      const decision = await limiter.consume('k');
      expect(decision.failure?.reason).toBe('timeout');
      const direct = new Limiter(inner, { name: 'p', algorithm, limit: 2, window: '1h' });
      expect((await direct.peek('k', { cost: 2 })).allowed).toBe(false); // charged, for now
      await new Promise((resolve) => setTimeout(resolve, 120)); // the late reply arrives
      expect((await direct.peek('k', { cost: 2 })).allowed).toBe(true); // and is given back
    },
  );
});
