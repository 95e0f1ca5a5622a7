import {
  Limiter,
  MemoryStore,
  type RefundRequest,
  type SpendRequest,
  type SpendResult,
  type StackResult,
  type Store,
} from '../../lib';
import { TestClock } from '../support/backends';

/**
 * A store whose stack calls answer when the test says: each `consumeStack` waits for its own
 * `release(n)` (n = 0 for the first call), then decides on a MemoryStore.
 */
class GatedStackStore implements Store {
  readonly gates: Array<() => void> = [];
  private readonly opened: Array<Promise<void>> = [];
  calls = 0;
  constructor(readonly inner: MemoryStore) {
    for (let n = 0; n < 4; n++) {
      this.opened.push(new Promise<void>((resolve) => this.gates.push(resolve)));
    }
  }
  async consumeStack(requests: readonly SpendRequest[]): Promise<StackResult> {
    await this.opened[this.calls++];
    return this.inner.consumeStack(requests);
  }
  peekStack(requests: readonly SpendRequest[]): Promise<StackResult> {
    return this.inner.peekStack(requests);
  }
  consume(request: SpendRequest): Promise<SpendResult> {
    return this.inner.consume(request);
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

describe('the wait of a stacked decision for the store', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("is the shortest timeoutMs of its parts' limiters", async () => {
    const store = new GatedStackStore(new MemoryStore({ clock: new TestClock().read }));
    const quiet = { onStoreFailure: () => undefined };
    const fast = new Limiter(
      store,
      { name: 'a', algorithm: 'fixed-window', limit: 5, window: '1m' },
      { ...quiet, timeoutMs: 50 },
    );
    const slow = new Limiter(
      store,
      { name: 'b', algorithm: 'fixed-window', limit: 5, window: '1m' },
      { ...quiet, timeoutMs: 500 },
    );
    let answer: Awaited<ReturnType<typeof Limiter.consumeAll>> | undefined;
    void Limiter.consumeAll([
      { limiter: slow, keys: 'k' },
      { limiter: fast, keys: 'k' },
    ]).then((stacked) => (answer = stacked));
    await jest.advanceTimersByTimeAsync(49);
    expect(answer).toBeUndefined();
    await jest.advanceTimersByTimeAsync(2);
    expect(answer?.decisions.map((d) => d.failure?.reason)).toEqual(['timeout', 'timeout']);
  });

  it('counts the second store call (parts in shadow mode set aside) against the same deadline', async () => {
    const inner = new MemoryStore({ clock: new TestClock().read });
    const store = new GatedStackStore(inner);
    const quiet = { onStoreFailure: () => undefined, onShadowRefusal: () => undefined };
    const shadow = {
      name: 's',
      algorithm: 'fixed-window',
      limit: 1,
      window: '1m',
      shadow: true,
    } as const;
    const enforced = { name: 'e', algorithm: 'fixed-window', limit: 5, window: '1m' } as const;
    await new Limiter(inner, shadow).consume('k'); // the shadow policy will refuse
    const limiters = [
      new Limiter(store, shadow, { ...quiet, timeoutMs: 100 }),
      new Limiter(store, enforced, { ...quiet, timeoutMs: 100 }),
    ];
    let answer: Awaited<ReturnType<typeof Limiter.consumeAll>> | undefined;
    void Limiter.consumeAll(limiters.map((limiter) => ({ limiter, keys: 'k' }))).then(
      (stacked) => (answer = stacked),
    );
    await jest.advanceTimersByTimeAsync(60);
    store.gates[0]!(); // the first call answers at 60 ms: only the shadow part refused
    await jest.advanceTimersByTimeAsync(1);
    expect(store.calls).toBe(2); // the second call, for the enforced part, never answers
    expect(answer).toBeUndefined();
    await jest.advanceTimersByTimeAsync(38); // 99 ms since the stack began
    expect(answer).toBeUndefined();
    await jest.advanceTimersByTimeAsync(2); // 101 ms: the stack's 100 ms are over
    expect(answer?.decisions[1]?.failure?.reason).toBe('timeout');
  });
});
