import { monotonicNow } from './clock.util';
import { StoreTimeoutError } from './errors';
import { asError } from './values.util';

interface Waiting {
  readonly at: number;
  /**
   * Fails the caller with the timeout it is handed; dropped once the call is answered (nothing
   * kept alive), so a reply that finds it gone came late.
   */
  expire?: (error: StoreTimeoutError) => void;
}

/**
 * What answers a bounded call ({@link Deadlines.bound}), called with the call's own `subject` and
 * `flag` (so one handler serves every call, without closures per call).
 */
export interface BoundHandler<T, R, S> {
  /** The answer from the store's value (may throw: the call then rejects with it). */
  value(subject: S, flag: boolean, value: T): R;
  /** The answer when the store failed or `ms` passed first (may throw or reject). */
  error(subject: S, flag: boolean, error: unknown): R | PromiseLike<R>;
  /** A value that arrived after the timeout answered the call. */
  late(subject: S, flag: boolean, value: T): void;
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
      const waiting: Waiting = { at: monotonicNow() + this.ms, expire: reject };
      this.push(waiting);
      promise.then(
        (value) => {
          if (waiting.expire === undefined) onLate?.(value);
          else {
            this.answered(waiting);
            resolve(value);
          }
        },
        (error: unknown) => {
          if (waiting.expire === undefined) return; // already answered; the late error changes nothing
          this.answered(waiting);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  /**
   * {@link race} answered by `handler` in the same promise: `handler.value` of what `promise`
   * resolves to in time, `handler.error` of its error or of the StoreTimeoutError when `ms` pass
   * first, `handler.late` of a value that arrives after that. One promise per call where
   * `race(…).then(…)` takes two. `at`: the call's deadline when it has one already (at most `ms`
   * from now); else `ms` from now.
   */
  bound<T, R, S>(
    promise: Promise<T>,
    handler: BoundHandler<T, R, S>,
    subject: S,
    flag: boolean,
    at?: number,
  ): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const fail = (error: unknown): void => {
        try {
          resolve(handler.error(subject, flag, error));
        } catch (thrown) {
          reject(asError(thrown));
        }
      };
      const waiting: Waiting = { at: this.deadline(at), expire: fail };
      this.push(waiting);
      promise.then(
        (value) => {
          if (waiting.expire === undefined) {
            handler.late(subject, flag, value);
            return;
          }
          this.answered(waiting);
          try {
            resolve(handler.value(subject, flag, value));
          } catch (thrown) {
            reject(asError(thrown));
          }
        },
        (error: unknown) => {
          if (waiting.expire === undefined) return; // already answered; the late error changes nothing
          this.answered(waiting);
          fail(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  /**
   * A call's deadline: `at` (the call's own, `ms` after it began: no clock read) or `ms` from now,
   * never before the latest one queued (deadlines stay in queue order; that one was set no later
   * than `ms` from now, so the wait stays bounded by `ms`).
   */
  private deadline(at: number | undefined): number {
    const deadline = at ?? monotonicNow() + this.ms;
    const queue = this.queue;
    const last = queue.length > this.head ? queue[queue.length - 1]!.at : -Infinity;
    return deadline < last ? last : deadline;
  }

  /** Drops an answered call's closure, and answered calls from the head of the queue. */
  private answered(waiting: Waiting): void {
    waiting.expire = undefined;
    const queue = this.queue;
    while (this.head < queue.length && queue[this.head]!.expire === undefined) this.head++;
    this.compact();
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
    while (this.head < queue.length) {
      const waiting = queue[this.head]!;
      if (waiting.expire !== undefined && waiting.at > now) break;
      this.head++;
      const expire = waiting.expire;
      waiting.expire = undefined;
      expire?.(new StoreTimeoutError(this.ms));
    }
    this.compact();
    if (this.head < queue.length) this.arm(queue[this.head]!.at);
  }

  /** Forgets the entries before the head: all of them once the queue drained, else in bulk. */
  private compact(): void {
    const queue = this.queue;
    if (this.head === queue.length) {
      queue.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > queue.length) {
      queue.splice(0, this.head);
      this.head = 0;
    }
  }
}
