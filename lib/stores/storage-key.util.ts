import { clusterSlot, slotTag } from './cluster-slot.util';
import { createHash } from 'node:crypto';

/** Caller keys longer than this are stored as their SHA-256, so stored key length stays bounded. */
export const MAX_PLAIN_KEY_LENGTH = 128;

/**
 * Caller keys stored as their SHA-256: braces (they would end or empty the hash tag early) and a
 * leading `#` (the mark of a stored hash, so no plain key can spell another key's hash).
 */
const HASHED = /[{}]|^#/;

/**
 * The stored name of one limit of one policy for one caller key.
 *
 * The caller key is the hash tag (`{…}`), so every limit and policy of one caller key lands in
 * one Redis Cluster slot; the policy name (no braces allowed) and limit index follow it. A caller
 * key that holds a brace (which would end the tag early, or leave it empty), starts with `#` or is
 * longer than {@link MAX_PLAIN_KEY_LENGTH} is stored as `#<SHA-256>`, so every tag is whole and
 * bounded, and the mapping stays one-to-one: a plain tag never starts with `#`.
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
  return `${prefix}{${hashTag(key)}}:${policy}:${limitIndex}`;
}

/**
 * The refund ledger of one caller key under one policy: the ids of spends already refunded and
 * the instant of the last reset. Same hash tag as the state keys.
 *
 * @example
 * ledgerKey('rl:', 'ip:203.0.113.7', 'login'); // 'rl:{ip:203.0.113.7}:login:r'
 */
export function ledgerKey(prefix: string, key: string, policy: string): string {
  return `${prefix}{${hashTag(key)}}:${policy}:r`;
}

/**
 * The lockout state of one caller key under one policy (policy option `block`): when the current
 * lockout ends, how long it lasts, and until when the next one escalates. Same hash tag as the
 * state keys.
 *
 * @example
 * blockKey('rl:', 'ip:203.0.113.7', 'login'); // 'rl:{ip:203.0.113.7}:login:b'
 */
export function blockKey(prefix: string, key: string, policy: string): string {
  return `${prefix}{${hashTag(key)}}:${policy}:b`;
}

/**
 * The device epoch (revocation counter) of one login key (see `Store.readEpoch`). After the prefix
 * it starts with `epoch:`, where every limiter state key starts with `{`, so the two never meet;
 * the login key is its hash tag (bounded and whole, as in {@link storageKey}).
 *
 * @example
 * epochKey('rl:', 'email:5f4dcc3b'); // 'rl:epoch:{email:5f4dcc3b}'
 */
export function epochKey(prefix: string, key: string): string {
  return `${prefix}epoch:{${hashTag(key)}}`;
}

/**
 * The fleet of processes that share a prefix (see lua/fleet/beat.lua): one sorted set. After the
 * prefix it is `fleet`, where every limiter state key starts with `{` and epochs with `epoch:`.
 *
 * @example
 * fleetKey('rl:'); // 'rl:fleet'
 */
export function fleetKey(prefix: string): string {
  return `${prefix}fleet`;
}

/**
 * A key named after one spend, in the slot of the spend's keys: the first caller key's hash tag,
 * then `!` and the spend id (the fleet fallback's charge markers add `:charged`). No limiter
 * state key has `}!`.
 *
 * @example
 * outcomeKey('rl:', 'ip:203.0.113.7', 'x1Yz9a2b3'); // 'rl:{ip:203.0.113.7}!x1Yz9a2b3'
 */
export function outcomeKey(prefix: string, key: string, spendId: string): string {
  return `${prefix}{${hashTag(key)}}!${spendId}`;
}

/**
 * The outcome hash one process keeps in one Cluster slot (`slot`, or -1 off Cluster) for its
 * spends' outcome markers (see lua/lib/outcome.lua): a tag in that slot, then `!` and the
 * process's spend id tag.
 *
 * @example
 * outcomeHashKey('rl:', -1, 'AbCdEfGh'); // 'rl:{}!AbCdEfGh'
 */
export function outcomeHashKey(prefix: string, slot: number, processTag: string): string {
  if (slot < 0) return `${prefix}{}!${processTag}`;
  const key = `${prefix}{${slotTag(slot)}}!${processTag}`;
  if (!prefix.includes('{') || clusterSlot(key) === slot) return key;
  // A `{` in the prefix moves the hash tag of every key, this one's too: a tag is searched for
  // that puts it in `slot` all the same (about 16,384 tries, once per slot).
  for (let i = 0; i < 1 << 22; i++) {
    const found = `${prefix}{${i.toString(36)}}!${processTag}`;
    if (clusterSlot(found) === slot) return found;
  }
  throw new Error(`redlimit: no outcome hash in Cluster slot ${slot} with prefix ${prefix}`);
}

function hashTag(key: string): string {
  return key.length > MAX_PLAIN_KEY_LENGTH || HASHED.test(key)
    ? `#${createHash('sha256').update(key).digest('base64url')}`
    : key;
}

/**
 * Stored keys of a request, key-major: entry `k * limits + l` is key k under limit l.
 *
 * @example
 * storageKeys('rl:', ['a', 'b'], 'login', 2); // ['rl:{a}:login:0', 'rl:{a}:login:1', 'rl:{b}:login:0', 'rl:{b}:login:1']
 */
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

/**
 * The state keys of a request (as {@link storageKeys}), then one ledger per caller key, then with
 * `withBlocks` one lockout state per caller key ({@link blockKey}): the KEYS of every script.
 *
 * @example
 * storageKeysWithLedgers('rl:', ['a'], 'login', 1); // ['rl:{a}:login:0', 'rl:{a}:login:r']
 */
export function storageKeysWithLedgers(
  prefix: string,
  keys: readonly string[],
  policy: string,
  limitCount: number,
  withBlocks = false,
): string[] {
  const out: string[] = [];
  pushStorageKeysWithLedgers(out, prefix, keys, policy, limitCount, withBlocks);
  return out;
}

/** {@link storageKeysWithLedgers}, appended to `out` (a batch's KEYS) instead of a new array. */
export function pushStorageKeysWithLedgers(
  out: string[],
  prefix: string,
  keys: readonly string[],
  policy: string,
  limitCount: number,
  withBlocks = false,
): void {
  if (keys.length === 1) {
    // One caller key (the common call): its base is the only one, no list of bases.
    const base = `${prefix}{${hashTag(keys[0]!)}}:${policy}:`;
    for (let l = 0; l < limitCount; l++) out.push(base + l);
    out.push(`${base}r`);
    if (withBlocks) out.push(`${base}b`);
    return;
  }
  const bases: string[] = [];
  for (const key of keys) {
    const base = `${prefix}{${hashTag(key)}}:${policy}:`;
    bases.push(base);
    for (let l = 0; l < limitCount; l++) out.push(base + l);
  }
  for (const base of bases) out.push(`${base}r`);
  if (withBlocks) for (const base of bases) out.push(`${base}b`);
}
