import { isResponseLike, type ResponseLike } from './retry-after.util';
import type { RetryAfterOptions } from './retry-options.interface';
import { RetrySchedule } from './retry-schedule';

/**
 * The response a client's error carries, found by shape: `error.response` with a numeric
 * `status` and `headers` (axios, ky, ofetch and others). `undefined` for network errors and the
 * like, which are not retried.
 *
 * @example
 * responseOfError(axiosError); // the AxiosResponse of a 429, or undefined for ECONNREFUSED
 */
export function responseOfError(error: unknown): ResponseLike | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { response } = error as { response?: unknown };
  return isResponseLike(response) ? response : undefined;
}

/** Hooks of {@link runWithRetries} for clients that need them (fetch). */
export interface RetryLoopHooks {
  /** Whether the call may be made again; when not, a retryable refusal gives up at once. */
  readonly replayable?: boolean;
  /** Releases a refused response that will not be returned (e.g. cancels its body). */
  readonly discard?: (response: ResponseLike) => Promise<void>;
}

/** The loop behind {@link withRetryAfter}, with hooks for {@link retryingFetch}. */
export async function runWithRetries<T>(
  schedule: RetrySchedule,
  call: (attempt: number) => Promise<T>,
  signal: AbortSignal | undefined,
  hooks: RetryLoopHooks = {},
): Promise<T> {
  let state = schedule.start();
  for (;;) {
    signal?.throwIfAborted();
    let refused: ResponseLike;
    let cause: unknown;
    try {
      const result = await call(state.attempts);
      if (!isResponseLike(result) || !schedule.retries(result.status)) return result;
      refused = result;
    } catch (error) {
      const response = responseOfError(error);
      if (response === undefined || !schedule.retries(response.status)) throw error;
      refused = response;
      cause = error;
    }
    if (hooks.replayable === false) {
      throw schedule.unreplayable(refused, state, cause);
    }
    const step = schedule.next(refused, state, cause);
    await hooks.discard?.(refused);
    await schedule.wait(step, state, refused.status, signal);
    state = { ...state, attempts: state.attempts + 1 };
  }
}

/**
 * Calls `call` until it is not refused: a result or error carrying a response with a status in
 * `retryOn` (default 429, 503) is retried after the server's `Retry-After` (or `RateLimit` `t`),
 * else after exponential backoff with full jitter, within `maxAttempts` and `maxTotalMs`; past
 * them it throws {@link RetryBudgetExceededError}. Works with anything that resolves to, or throws
 * with, a `{ status, headers }`: fetch, `firstValueFrom(httpService.get(…))` of @nestjs/axios, got,
 * undici. Anything else (a 404, a network error) is returned or thrown as is.
 *
 * Each attempt calls `call` again, so a request body is rebuilt every time. 429 and 503 say the
 * request was refused, not processed, so any method is retried; leave out calls you would not
 * repeat.
 *
 * @example
 * const { data } = await withRetryAfter(
 *   () => firstValueFrom(this.http.get<Quote>(`${base}/quotes/${id}`)),
 *   { maxAttempts: 4, maxTotalMs: 10_000 },
 * );
 */
export function withRetryAfter<T>(
  call: (attempt: number) => Promise<T>,
  options: RetryAfterOptions = {},
): Promise<T> {
  if (typeof call !== 'function') {
    throw new TypeError(`withRetryAfter needs a function to call, got ${typeof call}`);
  }
  return runWithRetries(new RetrySchedule(options), call, options.signal);
}
