import { createHash } from 'node:crypto';

/** Caller keys longer than this are stored as their SHA-256, so stored key length stays bounded. */
export const MAX_PLAIN_KEY_LENGTH = 128;

/** Braces would end (or empty) the hash tag early: such caller keys are stored as their SHA-256. */
const BRACE = /[{}]/;

/**
 * The stored name of one limit of one policy for one caller key.
 *
 * The caller key is the hash tag (`{…}`), so every limit and policy of one caller key lands in
 * one Redis Cluster slot; the policy name (no braces allowed) and limit index follow it. A caller
 * key that holds a brace (which would end the tag early, or leave it empty) or is longer than
 * {@link MAX_PLAIN_KEY_LENGTH} is stored as `#<SHA-256>`, so every tag is whole and bounded.
 *
 * @example
 * storageKey('rl:', 'ip:203.0.113.7', 'login', 0); // 'rl:{ip:203.0.113.7}:login:0'
 */
export function storageKey(
  prefix: string,
  key: string,
  policy: string,
  limitIndex: number,
): string {
  const tag =
    key.length > MAX_PLAIN_KEY_LENGTH || BRACE.test(key)
      ? `#${createHash('sha256').update(key).digest('base64url')}`
      : key;
  return `${prefix}{${tag}}:${policy}:${limitIndex}`;
}

/** Stored keys of a request, key-major: entry `k * limits + l` is key k under limit l. */
export function storageKeys(
  prefix: string,
  keys: readonly string[],
  policy: string,
  limitCount: number,
): string[] {
  const out: string[] = [];
  for (const key of keys) {
    for (let l = 0; l < limitCount; l++) out.push(storageKey(prefix, key, policy, l));
  }
  return out;
}
