/** A MemoryStore that counts spends, for specs that must show a request never reached the store. */
import {
  MemoryStore,
  type RefundRequest,
  type ResetRequest,
  type SpendRequest,
  type SpendResult,
  type Store,
} from '../../../lib/nest';

export class CountingStore implements Store {
  consumes = 0;
  private readonly inner = new MemoryStore();
  consume(request: SpendRequest): Promise<SpendResult> {
    this.consumes++;
    return this.inner.consume(request);
  }
  peek(request: SpendRequest): Promise<SpendResult> {
    return this.inner.peek(request);
  }
  refund(request: RefundRequest): Promise<void> {
    return this.inner.refund(request);
  }
  reset(request: ResetRequest): Promise<void> {
    return this.inner.reset(request);
  }
}
