import { fullJitterDelayMs } from './backoff.util';
import { RetryBudgetExceededError, type RetryGiveUpReason } from './retry-budget-exceeded.error';
import { type ResponseLike, serverWait } from './retry-after.util';
import {
  type ResolvedRetryOptions,
  type RetryAfterOptions,
  type RetryDelaySource,
  resolveRetryOptions,
} from './retry-options.interface';

/** The wait before the next attempt. */
export interface RetryStep {
  readonly delayMs: number;
  readonly source: RetryDelaySource;
}

/** Where a call stands: attempts made so far and when the first began. */
export interface RetryState {
  readonly attempts: number;
  readonly startedAtMs: number;
}

/**
 * The retry rules shared by {@link withRetryAfter}, {@link retryingFetch} and
 * {@link addRetryAfterInterceptor}: which statuses retry, how long to wait, when to give up.
 *
 * @example
 * const schedule = new RetrySchedule({ maxAttempts: 3 });
 * const state = schedule.start();
 * const step = schedule.next(refusedResponse, state); // throws RetryBudgetExceededError to give up
 * await schedule.wait(step, state, refusedResponse.status, signal);
 */
export class RetrySchedule {
  readonly options: ResolvedRetryOptions;

  constructor(options: RetryAfterOptions = {}) {
    this.options = resolveRetryOptions(options);
  }

  /** The state of a call whose first attempt starts now. */
  start(): RetryState {
    return { attempts: 1, startedAtMs: this.options.now() };
  }

  /** Whether a response with this status is retried. */
  retries(status: number): boolean {
    return this.options.retryOn.has(status);
  }

  /**
   * The wait after `state.attempts` attempts, the last refused with `response`; or, when no
   * further attempt fits the budget, a thrown {@link RetryBudgetExceededError} (`cause`: the
   * client's error, if the refusal came as one).
   */
  next(response: ResponseLike, state: RetryState, cause?: unknown): RetryStep {
    const { maxAttempts, maxTotalMs, baseDelayMs, maxDelayMs, random } = this.options;
    const nowMs = this.options.now();
    const asked = serverWait(response, nowMs);
    if (state.attempts >= maxAttempts) {
      throw this.giveUp('attempts', response, state, nowMs, cause);
    }
    const leftMs = maxTotalMs - (nowMs - state.startedAtMs);
    if (asked !== undefined) {
      // The server knows when it will say yes: an earlier retry would only be refused again, and
      // a wait past the budget would hold the caller for nothing.
      if (asked.delayMs > leftMs) throw this.giveUp('time', response, state, nowMs, cause);
      return asked;
    }
    if (leftMs < 0) throw this.giveUp('time', response, state, nowMs, cause);
    const delayMs = fullJitterDelayMs(state.attempts - 1, baseDelayMs, maxDelayMs, random, leftMs);
    return { delayMs, source: 'backoff' };
  }

  /** The error for a refusal that cannot be retried because the request cannot be sent again. */
  unreplayable(
    response: ResponseLike,
    state: RetryState,
    cause?: unknown,
  ): RetryBudgetExceededError {
    return this.giveUp('unreplayable-body', response, state, this.options.now(), cause);
  }

  /** Tells `onRetry`, then waits the step; rejects with `signal.reason` if the signal aborts. */
  async wait(
    step: RetryStep,
    state: RetryState,
    status: number,
    signal?: AbortSignal,
  ): Promise<void> {
    signal?.throwIfAborted();
    this.options.onRetry?.({ attempt: state.attempts, status, ...step });
    await this.options.sleep(step.delayMs, signal);
    // An injected sleep may not watch the signal.
    signal?.throwIfAborted();
  }

  private giveUp(
    reason: RetryGiveUpReason,
    response: ResponseLike,
    state: RetryState,
    nowMs: number,
    cause: unknown,
  ): RetryBudgetExceededError {
    return new RetryBudgetExceededError(
      {
        reason,
        response,
        attempts: state.attempts,
        retryAfterMs: serverWait(response, nowMs)?.delayMs,
        elapsedMs: Math.max(0, Math.round(nowMs - state.startedAtMs)),
        maxAttempts: this.options.maxAttempts,
        maxTotalMs: this.options.maxTotalMs,
      },
      cause === undefined ? undefined : { cause },
    );
  }
}
