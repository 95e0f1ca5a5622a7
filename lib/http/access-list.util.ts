import { createHash, timingSafeEqual } from 'node:crypto';
import type { BlockList } from 'node:net';
import { checkUnknownOptions } from '../core/options.util';
import { canonicalIp } from './ip-address.util';
import { inIpRangeList, ipRangeList } from './ip-range.util';
import type { AccessListOptions } from './http-options.types';

/** What an {@link AccessList} looks at in one request; a missing value matches nothing. */
export interface AccessCaller {
  /** The client IP (any form `canonicalIp` reads), ungrouped. */
  readonly ip?: string;
  /** The raw API key. */
  readonly apiKey?: string;
  /** The `User-Agent` header. */
  readonly userAgent?: string;
}

/** A checked `allow` or `deny` list, ready to match requests. */
export interface AccessList {
  /** Whether the list names the caller: any IP, API key or user-agent entry matches. */
  matches(caller: AccessCaller): boolean;
  /** Whether the list has IP entries (so the client IP must be found). */
  readonly needsIp: boolean;
  /** Whether the list has API-key entries. */
  readonly needsApiKey: boolean;
  /** Whether the list has user-agent entries. */
  readonly needsUserAgent: boolean;
}

const FIELDS: ReadonlySet<string> = new Set(['ips', 'apiKeys', 'userAgents']);

/**
 * Checks the module's `allow` or `deny` option (`option` names it in errors) and builds its
 * matcher; `undefined` when the option is unset or names nobody.
 *
 * - `ips` through a `node:net` `BlockList` (IPv4 and IPv6 ranges; IPv4-mapped IPv6 clients
 *   match IPv4 entries);
 * - `apiKeys` as SHA-256 digests compared with `timingSafeEqual`, every entry every time, so the
 *   time taken says nothing about how close a guess came;
 * - `userAgents`: strings by equality, RegExps by `test()` on a copy without the `g` and `y`
 *   flags (whose `lastIndex` would make every other test fail).
 *
 * @throws TypeError naming the option and what is wrong: not an object, an unknown field, a field
 *   that is not an array, an entry that is not an address or range, an empty API key, a user
 *   agent that is neither a string nor a RegExp
 * @example
 * const deny = compileAccessList({ ips: ['203.0.113.0/24'] }, 'deny');
 * deny?.matches({ ip: '203.0.113.9' }); // true
 */
export function compileAccessList(value: unknown, option: string): AccessList | undefined {
  if (value === undefined) return undefined;
  const where = `RedlimitModule ${option}`;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(
      `${where} must be an object { ips?, apiKeys?, userAgents? }; got ${describe(value)}`,
    );
  }
  checkUnknownOptions(value, FIELDS, where, 'expected ips, apiKeys, userAgents');
  const { ips, apiKeys, userAgents } = value as AccessListOptions;
  const ipList =
    ips === undefined ? undefined : ipRangeList(arrayOf(ips, `${where}.ips`), `${where}.ips`);
  const keyDigests = (apiKeys === undefined ? [] : arrayOf(apiKeys, `${where}.apiKeys`)).map(
    (key, i) => {
      if (typeof key !== 'string' || key.trim() === '') {
        throw new TypeError(`${where}.apiKeys[${i}] must be a non-empty string`);
      }
      return digest(key);
    },
  );
  const agents = (userAgents === undefined ? [] : arrayOf(userAgents, `${where}.userAgents`)).map(
    (agent, i) => userAgentMatcher(agent, `${where}.userAgents[${i}]`),
  );
  if (!ipList && keyDigests.length === 0 && agents.length === 0) return undefined;
  return Object.freeze({
    needsIp: ipList !== undefined,
    needsApiKey: keyDigests.length > 0,
    needsUserAgent: agents.length > 0,
    matches: (caller: AccessCaller) =>
      ipMatches(ipList, caller.ip) ||
      keyMatches(keyDigests, caller.apiKey) ||
      (caller.userAgent !== undefined && agents.some((agent) => agent(caller.userAgent!))),
  });
}

function ipMatches(list: BlockList | undefined, ip: string | undefined): boolean {
  if (list === undefined || ip === undefined) return false;
  const canonical = canonicalIp(ip);
  return canonical !== undefined && inIpRangeList(list, canonical);
}

function keyMatches(digests: readonly Buffer[], key: string | undefined): boolean {
  if (digests.length === 0 || key === undefined || key.trim() === '') return false;
  const given = digest(key);
  let found = false;
  for (const known of digests) found = timingSafeEqual(known, given) || found;
  return found;
}

/** An API key's SHA-256 (trimmed, as the API key header is read). */
function digest(key: string): Buffer {
  return createHash('sha256').update(key.trim()).digest();
}

function userAgentMatcher(agent: unknown, where: string): (userAgent: string) => boolean {
  if (typeof agent === 'string') return (userAgent) => userAgent === agent;
  if (Object.prototype.toString.call(agent) === '[object RegExp]') {
    // By tag, not instanceof: a RegExp from another realm (a vm context, a test runner) counts.
    const given = agent as RegExp;
    const pattern = new RegExp(given.source, given.flags.replace(/[gy]/g, ''));
    return (userAgent) => pattern.test(userAgent);
  }
  throw new TypeError(`${where} must be a string or a RegExp; got ${describe(agent)}`);
}

function arrayOf<T>(value: readonly T[], where: string): readonly T[] {
  const given: unknown = value;
  if (!Array.isArray(given)) {
    throw new TypeError(`${where} must be an array; got ${describe(given)}`);
  }
  return value;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null || typeof value !== 'object') return String(value);
  return Array.isArray(value) ? 'an array' : 'an object';
}
