/**
 * Latency at a fixed arrival rate (open loop). Decisions are due at start + n / rate, whether or
 * not earlier ones have answered; each one's latency counts from the instant it was due, not the
 * instant it was sent, so a stall shows in every decision that should have gone out during it
 * (no coordinated omission). A `setImmediate` loop sends whatever is due each turn of the event
 * loop, so sends lag their instants by one turn at most (and that lag is counted too).
 * Latencies go into a `perf_hooks` HDR histogram in whole nanoseconds.
 */
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';

export interface OpenLoopResult {
  readonly histogram: RecordableHistogram;
  /** Decisions sent per second, as achieved (the target unless the loop fell behind). */
  readonly sentPerSecond: number;
  /** Most decisions in flight at once. */
  readonly maxInFlight: number;
  /** Decisions that failed (their latency is recorded all the same), and the first error. */
  readonly failed: number;
  readonly firstError?: Error;
}

/** The most calls one open-loop run keeps waiting at once. */
const MAX_IN_FLIGHT = 20_000;

/**
 * Sends `rate` decisions per second for `seconds`, decision n for caller n % callers, and
 * resolves once all have answered. A failed decision (a limiter's timeout under a backlog, say)
 * is counted, and its latency recorded up to its failure.
 */
export function openLoop(
  run: (caller: number) => Promise<unknown>,
  rate: number,
  seconds: number,
  callers: number,
): Promise<OpenLoopResult> {
  const histogram = createHistogram();
  const total = Math.max(1, Math.floor(rate * seconds));
  const intervalMs = 1000 / rate;
  let sent = 0;
  let done = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  let failed = 0;
  let firstError: Error | undefined;
  let lastSentAt = 0;
  const start = performance.now();
  return new Promise((resolve) => {
    const answered = (intended: number) => () => {
      histogram.record(Math.max(1, Math.round((performance.now() - intended) * 1e6)));
      inFlight--;
      if (++done === total) {
        const sentPerSecond = total / Math.max(1e-3, (lastSentAt - start) / 1000);
        resolve({ histogram, sentPerSecond, maxInFlight, failed, firstError });
      }
    };
    const tick = () => {
      const due = Math.min(total, Math.floor((performance.now() - start) / intervalMs) + 1);
      // At most MAX_IN_FLIGHT calls wait at once: a contender slower than the rate falls behind
      // (each late call's latency counts from its intended send time) instead of piling calls up
      // until the heap runs out.
      while (sent < due && inFlight < MAX_IN_FLIGHT) {
        const finish = answered(start + sent * intervalMs);
        run(sent % callers).then(finish, (error: unknown) => {
          failed++;
          firstError ??= error instanceof Error ? error : new Error(String(error));
          finish();
        });
        sent++;
        inFlight++;
      }
      if (inFlight > maxInFlight) maxInFlight = inFlight;
      if (sent < total) setImmediate(tick);
      else lastSentAt = performance.now();
    };
    tick();
  });
}

/** A histogram's percentile in µs (the histogram holds ns). */
export function percentileUs(histogram: RecordableHistogram, percentile: number): number {
  return histogram.percentile(percentile) / 1000;
}
