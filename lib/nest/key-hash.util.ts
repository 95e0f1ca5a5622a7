import { createHash, createHmac } from 'node:crypto';

/** Stored in place of a value that is missing from the request (one shared budget per part). */
export const MISSING_VALUE = '-';

/**
 * The caller key of one `@Attempt` part: `<name>:<hash>`. The value is trimmed and lower-cased,
 * then hashed — HMAC-SHA-256 with `secret` when given, else SHA-256 — and the first 128 bits kept
 * (base64url, 22 characters), so equal values share a budget and none is stored in plain text.
 * A missing value becomes `<name>:-`.
 *
 * @example
 * attemptKey('email', ' Alice@Example.COM '); // 'email:' + 22 characters, same as for 'alice@example.com'
 * await registry.get('login').reset(attemptKey('email', 'alice@example.com', secret)); // unlock
 */
export function attemptKey(name: string, value: string | undefined, secret?: string): string {
  if (value === undefined) return `${name}:${MISSING_VALUE}`;
  const normalized = value.trim().toLowerCase();
  if (normalized === '') return `${name}:${MISSING_VALUE}`;
  const hash = secret ? createHmac('sha256', secret) : createHash('sha256');
  return `${name}:${hash.update(normalized).digest('base64url').slice(0, 22)}`;
}
