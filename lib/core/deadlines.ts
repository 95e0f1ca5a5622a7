import { monotonicNow } from './clock.util';
import { StoreTimeoutError } from './errors';

interface Waiting {
  readonly at: number;
  /** Rejects the caller with a timeout, unless it was answered already (then does nothing). */
  readonly expire: () => void;
}

/**
 * Bounds calls that all wait the same `ms` with one timer. Their deadlines come in call order, so
 * the earliest pending one is always at the head of a queue: one timer, armed for the head, serves
 * them all, instead of a timer set and cleared for every call. The timer never holds the process
 * open.
 */
export class Deadlines {
  private readonly queue: Waiting[] = [];
  private head = 0;
  private timer?: ReturnType<typeof setTimeout>;

  constructor(private readonly ms: number) {}

  /**
   * Settles like `promise` unless `ms` pass first (then rejects with StoreTimeoutError); a value
   * that arrives after that goes to `onLate`.
   */
  race<T>(promise: Promise<T>, onLate?: (value: T) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let state: 'waiting' | 'answered' | 'timedOut' = 'waiting';
      this.push({
        at: monotonicNow() + this.ms,
        expire: () => {
          if (state !== 'waiting') return;
          state = 'timedOut';
          reject(new StoreTimeoutError(this.ms));
        },
      });
      promise.then(
        (value) => {
          if (state === 'timedOut') onLate?.(value);
          else {
            state = 'answered';
            resolve(value);
          }
        },
        (error: unknown) => {
          if (state === 'timedOut') return; // already answered; the late error changes nothing
          state = 'answered';
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  private push(waiting: Waiting): void {
    this.queue.push(waiting);
    if (this.timer === undefined) this.arm(waiting.at);
  }

  private arm(at: number): void {
    this.timer = setTimeout(() => this.fire(), Math.max(0, Math.ceil(at - monotonicNow())));
    this.timer.unref();
  }

  /** Expires every call whose deadline has passed, then arms for the next one. */
  private fire(): void {
    this.timer = undefined;
    const now = monotonicNow();
    const queue = this.queue;
    while (this.head < queue.length && queue[this.head]!.at <= now) queue[this.head++]!.expire();
    if (this.head === queue.length) {
      queue.length = 0;
      this.head = 0;
      return;
    }
    if (this.head > 1024 && this.head * 2 > queue.length) {
      queue.splice(0, this.head);
      this.head = 0;
    }
    this.arm(queue[this.head]!.at);
  }
}
