import type { RetryAfterOptions } from './retry-options.interface';
import { RetrySchedule, type RetryState } from './retry-schedule';
import { responseOfError } from './with-retry-after';

/** A request config as axios hands it back on an error (`error.config`). */
export type AxiosLikeRequestConfig = Record<string, unknown>;

/**
 * The part of an axios instance the interceptor uses; `HttpService.axiosRef` of @nestjs/axios and
 * `axios.create()` fit it. Structural, so redlimit does not depend on axios.
 */
export interface AxiosLikeInstance {
  /** The instance's interceptor chains; only the response chain is used. */
  interceptors: {
    /** The response interceptor chain. */
    response: {
      /**
       * Registers an interceptor: redlimit passes no success handler and an error handler that
       * retries or rethrows; returns the id `eject` takes.
       */
      use(onFulfilled: undefined, onRejected: (error: unknown) => unknown): number;
    };
  };
  /** Sends a request again, from the config of the refused one (with redlimit's retry count). */
  request(config: AxiosLikeRequestConfig): Promise<unknown>;
}

/** Where the interceptor keeps a request's attempts, on the config axios passes back. */
const STATE_KEY = 'redlimitRetry';

/**
 * Adds a response interceptor to an axios instance that retries refused requests the way
 * {@link withRetryAfter} does: on a status in `retryOn` (default 429, 503) it waits the server's
 * `Retry-After` (or the `RateLimit` header's `t`), else exponential backoff with full jitter, then
 * sends the request again — within `maxAttempts` and `maxTotalMs`, past which the request rejects
 * with {@link RetryBudgetExceededError} (`cause`: the AxiosError). Network errors and other
 * statuses pass through. The request's `signal` aborts a wait. A stream `data` body is not sent
 * again (reason `'unreplayable-body'`). Returns the interceptor's id, for `eject`.
 *
 * @example
 * // In a Nest module that imports HttpModule from @nestjs/axios:
 * export class UpstreamModule implements OnModuleInit {
 *   constructor(private readonly http: HttpService) {}
 *   onModuleInit(): void {
 *     addRetryAfterInterceptor(this.http.axiosRef, { maxAttempts: 4, maxTotalMs: 10_000 });
 *   }
 * }
 */
export function addRetryAfterInterceptor(
  instance: AxiosLikeInstance,
  options: RetryAfterOptions = {},
): number {
  if (typeof instance?.interceptors?.response?.use !== 'function') {
    throw new TypeError(
      'addRetryAfterInterceptor needs an axios instance (interceptors.response.use)',
    );
  }
  const schedule = new RetrySchedule(options);
  return instance.interceptors.response.use(undefined, async (error: unknown) => {
    const response = responseOfError(error);
    const config = (error as { config?: unknown } | null)?.config;
    if (response === undefined || !schedule.retries(response.status) || !isObject(config)) {
      throw error;
    }
    const state = readState(config[STATE_KEY]) ?? schedule.start();
    if (isStream(config.data)) throw schedule.unreplayable(response, state, error);
    const step = schedule.next(response, state, error);
    await schedule.wait(step, state, response.status, signalOf(config.signal) ?? options.signal);
    const nextState: RetryState = { attempts: state.attempts + 1, startedAtMs: state.startedAtMs };
    return instance.request({ ...config, [STATE_KEY]: nextState });
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function readState(value: unknown): RetryState | undefined {
  if (!isObject(value)) return undefined;
  const { attempts, startedAtMs } = value;
  return typeof attempts === 'number' && typeof startedAtMs === 'number'
    ? { attempts, startedAtMs }
    : undefined;
}

/** Node streams and web streams are consumed by the first send. */
function isStream(data: unknown): boolean {
  return (
    isObject(data) && (typeof data.pipe === 'function' || typeof data.getReader === 'function')
  );
}

/** axios accepts any AbortSignal-shaped object; only a real one can abort our wait. */
function signalOf(value: unknown): AbortSignal | undefined {
  return isObject(value) &&
    typeof value.aborted === 'boolean' &&
    typeof value.addEventListener === 'function' &&
    typeof value.throwIfAborted === 'function'
    ? (value as unknown as AbortSignal)
    : undefined;
}
