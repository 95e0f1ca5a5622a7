import { monotonicNow } from '../core/clock.util';
import type { ClockOffset } from './clock-offset';

/**
 * Issue order through the first measurement of the Redis clock. A spend with a deadline needs the
 * clock's offset to send its deadline; until one `TIME` has answered, that spend and everything
 * issued after it (whatever its kind) are held, then sent in issue order. If the measurement fails,
 * the held spends fail with its error and the rest go ahead. With a custom clock nothing is held.
 */
export class ClockGate {
  /** Operations issued while the measurement runs, in issue order (undefined: none runs). */
  private held?: Array<(probeError?: Error) => void>;

  /**
   * @param offset the store's estimate of the Redis clock, fed by the measurement
   * @param time one Redis `TIME`: [seconds, microseconds]
   * @param customClock whether the store reads a clock of its own (then it never waits)
   */
  constructor(
    private readonly offset: ClockOffset,
    private readonly time: () => Promise<ReadonlyArray<string | number>>,
    private readonly customClock: boolean,
  ) {}

  /** Whether an operation (a spend with this deadline) may be sent now: nothing held or to hold. */
  open(deadlineAt: number | undefined): boolean {
    return this.held === undefined && !this.needsClock(deadlineAt);
  }

  /** Whether anything is held (operations issued now must queue behind it). */
  get holding(): boolean {
    return this.held !== undefined;
  }

  /** Sends an operation now, or once the measurement it needs (or one running) has answered. */
  inOrder<T>(deadlineAt: number | undefined, send: () => Promise<T>): Promise<T> {
    const needsClock = this.needsClock(deadlineAt);
    if (this.held === undefined) {
      if (!needsClock) return send();
      this.measure();
    }
    return new Promise<T>((resolve, reject) => {
      this.held!.push((probeError) => {
        if (probeError !== undefined && needsClock) reject(probeError);
        else send().then(resolve, reject);
      });
    });
  }

  /** Whether a spend with this deadline needs the Redis clock measured first. */
  private needsClock(deadlineAt: number | undefined): boolean {
    return deadlineAt !== undefined && !this.customClock && this.offset.value === undefined;
  }

  /** Measures the Redis clock (one TIME), then sends what was held meanwhile, in issue order. */
  private measure(): void {
    const held: Array<(probeError?: Error) => void> = (this.held = []);
    const release = (probeError?: Error): void => {
      this.held = undefined;
      for (const send of held) send(probeError);
    };
    const sentAt = monotonicNow();
    this.time().then(
      ([seconds, micros]) => {
        const redisNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
        this.offset.observe(sentAt, monotonicNow(), redisNow);
        release();
      },
      (error: unknown) => release(error instanceof Error ? error : new Error(String(error))),
    );
  }
}
