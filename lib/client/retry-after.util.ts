/**
 * Response headers as fetch (`Headers`, with `get`), axios (`AxiosHeaders`, or a plain object with
 * lower-case names) and most HTTP clients expose them.
 */
export type HeadersLike =
  | {
      /** The value of header `name`, matched case-insensitively (fetch `Headers`, `AxiosHeaders`). */
      get(name: string): unknown;
    }
  | Readonly<Record<string, unknown>>;

/**
 * The part of a response a retry looks at: a fetch `Response`, an axios response, or any
 * `{ status, headers }`.
 *
 * @example
 * const refused: ResponseLike = { status: 429, headers: { 'retry-after': '2' } };
 */
export interface ResponseLike {
  /** The HTTP status code, e.g. 429. */
  readonly status: number;
  /** The response headers; `Retry-After` and `RateLimit` are read from them. */
  readonly headers: HeadersLike;
}

/** A wait the server asked for, and which header said so. */
export interface ServerWait {
  readonly delayMs: number;
  readonly source: 'retry-after' | 'ratelimit';
}

/** Whether `value` looks like a response: a numeric `status` and an object of `headers`. */
export function isResponseLike(value: unknown): value is ResponseLike {
  if (typeof value !== 'object' || value === null) return false;
  const { status, headers } = value as { status?: unknown; headers?: unknown };
  return typeof status === 'number' && typeof headers === 'object' && headers !== null;
}

/**
 * One header's value, case-insensitively; the first of a list.
 *
 * @example
 * readHeader(new Headers({ 'Retry-After': '3' }), 'retry-after'); // '3'
 * readHeader({ 'retry-after': ['3'] }, 'Retry-After'); // '3'
 */
export function readHeader(headers: HeadersLike, name: string): string | undefined {
  let value: unknown;
  if (typeof headers.get === 'function') {
    value = (headers as { get(name: string): unknown }).get(name);
  } else {
    const wanted = name.toLowerCase();
    const key = Object.keys(headers).find((k) => k.toLowerCase() === wanted);
    value = key === undefined ? undefined : (headers as Record<string, unknown>)[key];
  }
  if (Array.isArray(value)) value = value[0];
  if (typeof value === 'number') return String(value);
  return typeof value === 'string' ? value : undefined;
}

// RFC 9110 §5.6.7: IMF-fixdate, obsolete RFC 850 and asctime formats (always GMT).
const IMF_FIXDATE = /^[a-z]{3}, \d{2} [a-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/i;
const RFC_850 = /^[a-z]{6,9}, \d{2}-[a-z]{3}-\d{2} \d{2}:\d{2}:\d{2} GMT$/i;
const ASCTIME = /^[a-z]{3} [a-z]{3} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/i;

/**
 * A `Retry-After` value as ms to wait from `nowMs`: delta-seconds (`120`) or an HTTP date
 * (`Wed, 21 Oct 2015 07:28:00 GMT`; a date in the past is 0). Anything else is `undefined`, so a
 * malformed header falls back to backoff instead of being read as 0.
 *
 * @example
 * parseRetryAfter('2', Date.now()); // 2000
 * parseRetryAfter('Wed, 21 Oct 2015 07:28:05 GMT', Date.parse('2015-10-21T07:28:00Z')); // 5000
 * parseRetryAfter('soon', Date.now()); // undefined
 */
export function parseRetryAfter(value: string, nowMs: number): number | undefined {
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  let dateMs = Number.NaN;
  if (IMF_FIXDATE.test(text) || RFC_850.test(text)) dateMs = Date.parse(text);
  else if (ASCTIME.test(text)) dateMs = Date.parse(`${text} GMT`);
  return Number.isNaN(dateMs) ? undefined : Math.max(0, dateMs - nowMs);
}

/**
 * The wait a `RateLimit` header (draft-ietf-httpapi-ratelimit-headers) implies: the largest `t`
 * (seconds until the quota resets) among items with no quota left (`r=0`), in ms. `undefined` when
 * no item is exhausted or the header does not parse.
 *
 * @example
 * parseRateLimitWait('"burst";r=0;t=3, "daily";r=50;t=3600'); // 3000
 * parseRateLimitWait('"api";r=4;t=30'); // undefined
 */
export function parseRateLimitWait(value: string): number | undefined {
  let waitMs: number | undefined;
  // Items are separated by commas outside sf-strings.
  for (const item of value.match(/(?:[^,"]|"(?:[^"\\]|\\.)*")+/g) ?? []) {
    const params = new Map<string, string>();
    for (const [, key, val] of item.matchAll(/;\s*([a-z*][a-z0-9_.*-]*)\s*=\s*([^;\s]*)/gi)) {
      if (key !== undefined && val !== undefined) params.set(key.toLowerCase(), val);
    }
    const remaining = params.get('r');
    const reset = params.get('t');
    if (remaining === '0' && reset !== undefined && /^\d+$/.test(reset)) {
      waitMs = Math.max(waitMs ?? 0, Number(reset) * 1000);
    }
  }
  return waitMs;
}

/**
 * What the server asked the client to wait: `Retry-After` if present and valid, else the
 * `RateLimit` header's `t` for an exhausted quota, else `undefined` (the client backs off).
 *
 * @example
 * serverWait({ status: 429, headers: { 'retry-after': '1' } }, Date.now());
 * // { delayMs: 1000, source: 'retry-after' }
 */
export function serverWait(response: ResponseLike, nowMs: number): ServerWait | undefined {
  const retryAfter = readHeader(response.headers, 'retry-after');
  const fromRetryAfter = retryAfter === undefined ? undefined : parseRetryAfter(retryAfter, nowMs);
  if (fromRetryAfter !== undefined) return { delayMs: fromRetryAfter, source: 'retry-after' };
  const rateLimit = readHeader(response.headers, 'ratelimit');
  const fromRateLimit = rateLimit === undefined ? undefined : parseRateLimitWait(rateLimit);
  if (fromRateLimit !== undefined) return { delayMs: fromRateLimit, source: 'ratelimit' };
  return undefined;
}
