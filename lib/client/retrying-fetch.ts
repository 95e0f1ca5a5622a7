import type { ResponseLike } from './retry-after.util';
import type { RetryAfterOptions } from './retry-options.interface';
import { RetrySchedule } from './retry-schedule';
import { runWithRetries } from './with-retry-after';

/** The signature of the global `fetch`. */
export type FetchFunction = (
  input: string | URL | Request,
  init?: RequestInit,
) => Promise<Response>;

/** {@link RetryAfterOptions} plus the fetch to wrap. */
export interface RetryingFetchOptions extends RetryAfterOptions {
  /** The fetch to wrap. Default: `globalThis.fetch`, looked up at each call. */
  fetch?: FetchFunction;
}

/**
 * A fetch that honours `Retry-After`: a response with a status in `retryOn` (default 429, 503) is
 * retried after the wait the server asked for (`Retry-After` seconds or date, else the `RateLimit`
 * header's `t`), or after exponential backoff with full jitter when it named none; within
 * `maxAttempts` and `maxTotalMs`, past which it throws {@link RetryBudgetExceededError} (with the
 * last response) instead of returning it. Other responses, and network errors, come back as from
 * fetch.
 *
 * Bodies: a `Request` is cloned for each attempt; string, buffer, Blob, FormData and
 * URLSearchParams bodies are sent again as they are. A stream body (`ReadableStream`, async
 * iterable) can be sent only once: its call is made once, and a refusal throws the error with
 * reason `'unreplayable-body'`. The signal of the request (and `options.signal`) also aborts a
 * wait. Refused responses that are retried have their bodies cancelled.
 *
 * @example
 * const fetchWithRetries = retryingFetch({ maxAttempts: 4, maxTotalMs: 15_000 });
 * const res = await fetchWithRetries('https://inventory.internal/stock/42', {
 *   signal: AbortSignal.timeout(20_000),
 * });
 */
export function retryingFetch(options: RetryingFetchOptions = {}): FetchFunction {
  if (options.fetch !== undefined && typeof options.fetch !== 'function') {
    throw new TypeError(`fetch must be a function, got ${typeof options.fetch}`);
  }
  const schedule = new RetrySchedule(options);
  return (input, init) => {
    const request = isRequest(input) ? input : undefined;
    const signal = anySignal([options.signal, init?.signal ?? undefined, request?.signal]);
    const fetchOnce = options.fetch ?? globalThis.fetch;
    return runWithRetries(
      schedule,
      // A Request's body can be read once: each attempt sends a copy.
      () => fetchOnce(request ? request.clone() : input, init),
      signal,
      { replayable: !isStreamBody(init?.body), discard: cancelBody },
    );
  };
}

function isRequest(input: unknown): input is Request {
  return (
    typeof input === 'object' && input !== null && typeof (input as Request).clone === 'function'
  );
}

/** A ReadableStream, Node stream or async iterable: consumed by the first send. */
function isStreamBody(body: unknown): boolean {
  if (typeof body !== 'object' || body === null) return false;
  return (
    typeof (body as { getReader?: unknown }).getReader === 'function' ||
    Symbol.asyncIterator in body
  );
}

function anySignal(signals: (AbortSignal | undefined)[]): AbortSignal | undefined {
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  return present.length <= 1 ? present[0] : AbortSignal.any(present);
}

/** Frees the connection of a response nobody will read. */
async function cancelBody(response: ResponseLike): Promise<void> {
  const { body } = response as { body?: { cancel?: () => Promise<void> } | null };
  if (typeof body?.cancel === 'function') await body.cancel().catch(() => undefined);
}
