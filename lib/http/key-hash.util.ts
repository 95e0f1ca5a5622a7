import { createHash, createHmac } from 'node:crypto';
import { normalizeIdentity } from './identity-normalize.util';

/** Stored in place of a value that is missing from the request (one shared budget per part). */
export const MISSING_VALUE = '-';

/** How {@link attemptKey} treats a value before hashing it. */
export interface AttemptKeyOptions {
  /**
   * `true` (default): {@link normalizeIdentity} (default-ignorable code points removed, NFKC,
   * lower-cased, trimmed). `false`: hashed exactly as given (case-sensitive tokens).
   */
  readonly normalize?: boolean;
}

/**
 * The caller key of one `@Attempt` part: `<name>:<hash>`. The value is normalised
 * ({@link normalizeIdentity}: Unicode-equivalent spellings become one; `normalize: false` keeps
 * it as given), then hashed — HMAC-SHA-256 with `secret` when given, else SHA-256 — and the first
 * 22 base64url characters (132 bits) kept, so equal values share a budget and none is stored in
 * plain text. A missing or empty value becomes `<name>:-`.
 *
 * Without a secret the hash only keeps values out of plain sight: anyone holding the keys can
 * hash candidates (every IPv4 address in seconds, a leaked email list) and find matches. With
 * `secret`, that needs the secret too.
 *
 * @example
 * attemptKey('email', ' Alice@Example.COM '); // 'email:' + 22 characters, same as for 'alice@example.com'
 * await registry.get('login').reset(attemptKey('email', 'alice@example.com', secret)); // unlock
 */
export function attemptKey(
  name: string,
  value: string | undefined,
  secret?: string,
  options: AttemptKeyOptions = {},
): string {
  if (value === undefined) return `${name}:${MISSING_VALUE}`;
  const normalized = options.normalize === false ? value : normalizeIdentity(value);
  if (normalized === '') return `${name}:${MISSING_VALUE}`;
  const hash = secret ? createHmac('sha256', secret) : createHash('sha256');
  return `${name}:${hash.update(normalized).digest('base64url').slice(0, 22)}`;
}

/**
 * An API key's hash for caller keys: like {@link attemptKey} but case-sensitive (API keys are),
 * trimmed only. HMAC-SHA-256 with `secret` when given, else SHA-256; the first 22 base64url
 * characters (132 bits).
 *
 * @example
 * `apiKey:${apiKeyHash('sk_live_abc')}`; // what @Throttle(…, { by: 'apiKey' }) charges
 */
export function apiKeyHash(value: string, secret?: string): string {
  const hash = secret ? createHmac('sha256', secret) : createHash('sha256');
  return hash.update(value.trim()).digest('base64url').slice(0, 22);
}
