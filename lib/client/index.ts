/**
 * Clients that honour `Retry-After`: helpers for outgoing HTTP calls (fetch, axios and
 * @nestjs/axios, or any call returning `{ status, headers }`) that wait as a refusing server asks,
 * back off with full jitter when it does not say, and give up within a budget. No Nest imports.
 */
export * from './retry-after.interceptor';
export type { HeadersLike, ResponseLike } from './retry-after.util';
export * from './retry-budget-exceeded.error';
export type { RetryAfterOptions, RetryDelaySource, RetryNotice } from './retry-options.interface';
export * from './retrying-fetch';
export { withRetryAfter } from './with-retry-after';
