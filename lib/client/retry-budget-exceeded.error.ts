import type { ResponseLike } from './retry-after.util';

/**
 * Why a client stopped retrying: `attempts` (`maxAttempts` used up), `time` (the wait the server
 * asked for, or any wait, would end past `maxTotalMs`), `unreplayable-body` (the request body was
 * a stream, which cannot be sent twice).
 */
export type RetryGiveUpReason = 'attempts' | 'time' | 'unreplayable-body';

/** What {@link RetryBudgetExceededError} is built from. */
export interface RetryBudgetExceededDetails<R extends ResponseLike = ResponseLike> {
  /** Why the client stopped retrying. */
  readonly reason: RetryGiveUpReason;
  /** The last response, still refused. */
  readonly response: R;
  /** Attempts made, the first included. */
  readonly attempts: number;
  /** The wait the server asked for in its last response (ms), if it named one. */
  readonly retryAfterMs: number | undefined;
  /** Time since the first attempt, in ms. */
  readonly elapsedMs: number;
  /** The budget in force: attempts allowed, the first included. */
  readonly maxAttempts: number;
  /** The budget in force: time from the first attempt within which every retry must start, in ms. */
  readonly maxTotalMs: number;
}

/**
 * Thrown when a call is still refused (429, 503, … — see `retryOn`) and the client will not try
 * again. It gives up without sleeping when the server asks for a longer wait than the budget has
 * left: sleeping in vain would only hold the caller. The last response is kept (read its body, if
 * you like); for an error-throwing client such as axios, `cause` is the client's own error.
 *
 * @example
 * try {
 *   await fetchWithRetries('https://api.example.com/quota');
 * } catch (err) {
 *   if (err instanceof RetryBudgetExceededError && err.reason === 'time') {
 *     throw new ServiceUnavailableException(`upstream asks for ${err.retryAfterMs} ms`);
 *   }
 *   throw err;
 * }
 */
export class RetryBudgetExceededError<R extends ResponseLike = ResponseLike> extends Error {
  /** Always `'RetryBudgetExceededError'`: survives serialisation and minification, unlike the class name. */
  override readonly name = 'RetryBudgetExceededError';
  /** Why the client stopped retrying: attempts used up, no time left, or a body it cannot resend. */
  readonly reason: RetryGiveUpReason;
  /** Status of the last response. */
  readonly status: number;
  /** Attempts made, the first included. */
  readonly attempts: number;
  /** The wait the server asked for in its last response (ms), if it named one. */
  readonly retryAfterMs: number | undefined;
  /** Time since the first attempt, in ms. */
  readonly elapsedMs: number;
  /** The last response. */
  readonly response: R;

  constructor(details: RetryBudgetExceededDetails<R>, options?: { cause?: unknown }) {
    super(describe(details), options);
    this.reason = details.reason;
    this.status = details.response.status;
    this.attempts = details.attempts;
    this.retryAfterMs = details.retryAfterMs;
    this.elapsedMs = details.elapsedMs;
    this.response = details.response;
  }
}

function describe(d: RetryBudgetExceededDetails): string {
  const head = `Gave up after ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}: the server answered ${d.response.status}`;
  const asked = d.retryAfterMs === undefined ? '' : ` and asks to wait ${d.retryAfterMs} ms`;
  switch (d.reason) {
    case 'attempts':
      return `${head}${asked}, and maxAttempts (${d.maxAttempts}) is used up`;
    case 'time': {
      const leftMs = Math.max(0, Math.floor(d.maxTotalMs - d.elapsedMs));
      return d.retryAfterMs === undefined
        ? `${head}, and the retry budget (maxTotalMs ${d.maxTotalMs}) is spent`
        : `${head}${asked}, more than the ${leftMs} ms left of maxTotalMs (${d.maxTotalMs})`;
    }
    case 'unreplayable-body':
      return (
        `${head}, and the request body is a stream, which cannot be sent again; ` +
        'pass a string, Buffer, Blob, FormData or URLSearchParams body to allow retries'
      );
  }
}
