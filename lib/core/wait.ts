import { monotonicNow } from './clock.util';
import { checkOptions } from './options.util';

/** Options of waiting for a turn ({@link Limiter.waitFor}, {@link Limiter.waitForAll}). */
export interface WaitOptions {
  /**
   * The longest wait in all, in ms: once the next try would come later than this after the
   * call began, the call rejects with the last refusal (`RateLimitedError`). 0: one try, no wait.
   */
  readonly maxWaitMs: number;
  /** Stops waiting: the call rejects with the signal's `reason` (an `AbortError` by default). */
  readonly signal?: AbortSignal;
}

/**
 * How a limiter sleeps between tries: resolves after `ms`, rejects with `signal.reason` as soon as
 * the signal aborts. The default is a timer; a test on a controllable clock can advance the clock
 * instead.
 */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** The longest delay `setTimeout` honours (a longer one fires after 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Jitter added to each sleep: up to a tenth of it, at most this many ms (spreads out retries). */
const MAX_JITTER_MS = 25;

/** A timer that honours an AbortSignal and does not hold the process open. */
export const timerSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error); // whatever the signal was aborted with, as Node’s timers do
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    timer.unref();
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * Checks waiting options before anything is sent.
 *
 * @param extra option names the caller takes besides `maxWaitMs` and `signal` (e.g. `cost`)
 * @throws TypeError / RangeError naming the option
 */
export function checkWaitOptions(
  options: WaitOptions,
  caller: string,
  extra: readonly string[] = [],
): WaitOptions {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${caller}() needs options { maxWaitMs, signal? }`);
  }
  checkOptions(options, ['maxWaitMs', 'signal', ...extra], `${caller}() options`);
  const { maxWaitMs, signal } = options;
  if (
    typeof maxWaitMs !== 'number' ||
    !Number.isFinite(maxWaitMs) ||
    maxWaitMs < 0 ||
    maxWaitMs > MAX_TIMER_MS
  ) {
    throw new RangeError(
      `${caller}() options.maxWaitMs must be a number of ms from 0 to ${MAX_TIMER_MS}; got ${String(maxWaitMs)}`,
    );
  }
  if (
    signal !== undefined &&
    (signal === null ||
      typeof signal !== 'object' ||
      typeof (signal as { aborted?: unknown }).aborted !== 'boolean' ||
      typeof (signal as { addEventListener?: unknown }).addEventListener !== 'function')
  ) {
    throw new TypeError(`${caller}() options.signal must be an AbortSignal`);
  }
  return { maxWaitMs, ...(signal !== undefined && { signal }) };
}

/** The first retry of a wait that is only an upper bound (a concurrency lease's expiry), in ms. */
const POLL_FIRST_MS = 10;
/** The longest sleep between those retries, in ms. */
const POLL_MAX_MS = 1_000;

/**
 * Tries until allowed: after each refusal, sleeps until its `retryAfterMs` (plus a little jitter)
 * and tries again; never spins. Rejects with `refused(answer)` when the store failed closed
 * (`failed`), or when the next try would come after `maxWaitMs`; with the signal's reason when it
 * aborts. Time waited counts both the clock and the sleeps asked for (so a sleep that advances a
 * test clock counts too). An answer `bounded` says is only an upper bound (a concurrency lease can
 * be released before it expires) is tried again sooner: after 10 ms, doubling up to 1 s.
 */
export async function waitTurn<
  T extends { readonly allowed: boolean; readonly retryAfterMs: number },
>(
  attempt: () => Promise<T>,
  failed: (answer: T) => boolean,
  refused: (answer: T) => Error,
  { maxWaitMs, signal }: WaitOptions,
  sleep: Sleep,
  bounded?: (answer: T) => boolean,
): Promise<T> {
  signal?.throwIfAborted();
  const started = monotonicNow();
  let poll = POLL_FIRST_MS; // a wait that is only an upper bound is polled, doubling up to POLL_MAX_MS
  let asked = 0; // ms of sleep asked for
  let slept = 0; // ms the sleeps took on the monotonic clock
  for (;;) {
    const answer = await attempt();
    if (answer.allowed) return answer;
    if (failed(answer)) throw refused(answer);
    signal?.throwIfAborted();
    const real = monotonicNow() - started;
    const elapsed = Math.max(real, real - slept + asked);
    // A wait that is not a number (a store of your own answering oddly) never spins: it rejects.
    let wait = Number.isFinite(answer.retryAfterMs) ? Math.max(1, answer.retryAfterMs) : Infinity;
    if (bounded?.(answer)) {
      // A lease can be released long before it expires: try again sooner, backing off.
      wait = Math.min(wait, poll);
      poll = Math.min(poll * 2, POLL_MAX_MS);
    }
    if (elapsed + wait > maxWaitMs) throw refused(answer);
    const jitter = Math.floor(Math.random() * Math.min(wait / 10, MAX_JITTER_MS));
    const ms = Math.min(wait + jitter, maxWaitMs - elapsed);
    const before = monotonicNow();
    await sleep(ms, signal);
    slept += monotonicNow() - before;
    asked += ms;
  }
}
