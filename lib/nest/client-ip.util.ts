import { type BlockList, isIP } from 'node:net';
import { canonicalIp, groupIp, stripZone } from './ip-address.util';
import { inIpRangeList, ipRangeList } from './ip-range.util';
import type { ClientIpHeader, ClientIpOptions } from './redlimit-options.interface';

export { canonicalIp, groupIp } from './ip-address.util';

/**
 * Finds the client of a request from its peer address and the value of the configured client-IP
 * header ({@link ClientIpResolver.header}); `undefined` when the client cannot be named (no peer
 * address, or a trusted proxy wrote something that is not an address). IPv6 clients come back
 * grouped by the configured subnet.
 */
export interface ClientIpResolver {
  (peerAddress: string | undefined, headerValue?: string | readonly string[]): string | undefined;
  /** The request header the resolver reads from trusted proxies (lower case). */
  readonly header: ClientIpHeader;
  /** Whether an address is one of the trusted proxies. */
  isTrusted(address: string): boolean;
}

/** The headers `clientIp.header` accepts: what real proxies and CDNs set. */
export const CLIENT_IP_HEADERS: readonly ClientIpHeader[] = [
  'x-forwarded-for',
  'forwarded',
  'cf-connecting-ip',
  'true-client-ip',
  'fly-client-ip',
  'x-real-ip',
];

const OPTION_KEYS: ReadonlySet<string> = new Set(['trustedProxies', 'ipv6Subnet', 'header']);

/**
 * The tracker of a call whose transport has no client address at all (a microservice over Redis
 * or NATS): one budget per handler. HTTP requests whose peer address cannot be read are refused
 * instead (see `RedlimitHttp.clientIp`).
 */
export const UNKNOWN_CLIENT = 'unknown';

/** An RFC 7239 obfuscated identifier (`for=_hidden`): a trusted proxy's stable name for a client. */
const OBFUSCATED = /^_[A-Za-z0-9._-]+$/;

/**
 * Builds the client-IP resolver for module options. The client is the peer address, unless the
 * peer is a trusted proxy:
 *
 * - `header: 'x-forwarded-for'` (default): the chain is walked from the right past trusted proxies;
 *   the first hop that is not one is the client. Hops may carry a port (`203.0.113.7:51234`,
 *   `[2001:db8::1]:443`). A hop that a trusted proxy wrote and that is not an address (`unknown`,
 *   `010.0.0.1` — an IPv4 part with a leading zero is not an address, since some parsers read it
 *   as octal) names no one: `undefined`.
 * - `header: 'forwarded'`: RFC 7239, the `for=` of each element, walked the same way; quoted and
 *   bracketed IPv6 with a port, obfuscated identifiers (`for=_hidden`, which name the client as
 *   they are); `for=unknown` or an element without `for=` names no one.
 * - `'cf-connecting-ip'`, `'true-client-ip'`, `'fly-client-ip'`, `'x-real-ip'`: one address, the
 *   client (a port is dropped); absent → the peer itself.
 *
 * IPv6 results are grouped by `ipv6Subnet` (default 64); IPv4-mapped IPv6 becomes IPv4.
 *
 * @throws TypeError naming a `trustedProxies` entry that is not an address, range or known name,
 *   an unknown `header`, a `header` without `trustedProxies`, or an unknown option
 * @example
 * const clientIp = createClientIpResolver({ trustedProxies: ['loopback'] });
 * clientIp('127.0.0.1', '198.51.100.4, 10.0.0.2'); // '10.0.0.2' (10.0.0.2 is not trusted)
 * clientIp('127.0.0.1', '198.51.100.4:51234'); // '198.51.100.4'
 * clientIp('2001:db8::7'); // '2001:db8:0:0::/64'
 */
export function createClientIpResolver(options: ClientIpOptions = {}): ClientIpResolver {
  if (options === null || typeof options !== 'object') {
    throw new TypeError('clientIp must be an object: { trustedProxies?, ipv6Subnet?, header? }');
  }
  const unknown = Object.keys(options).filter((key) => !OPTION_KEYS.has(key));
  if (unknown.length > 0) {
    throw new TypeError(
      `clientIp has unknown option ${unknown.map((key) => `'${key}'`).join(', ')}; ` +
        'expected trustedProxies, ipv6Subnet, header',
    );
  }
  const subnet = options.ipv6Subnet ?? 64;
  if (!Number.isInteger(subnet) || subnet < 1 || subnet > 128) {
    throw new RangeError(`clientIp.ipv6Subnet must be a whole number from 1 to 128; got ${subnet}`);
  }
  const trusted = trustList(options.trustedProxies ?? []);
  const header = options.header ?? 'x-forwarded-for';
  if (!CLIENT_IP_HEADERS.includes(header)) {
    throw new TypeError(
      `clientIp.header must be one of ${CLIENT_IP_HEADERS.map((h) => `'${h}'`).join(', ')}; ` +
        `got ${JSON.stringify(header)}`,
    );
  }
  if (options.header !== undefined && !trusted) {
    throw new TypeError(
      `clientIp.header '${header}' is believed only from trusted proxies: set ` +
        'clientIp.trustedProxies to the addresses of the proxies that write it',
    );
  }
  // Every request asks about its peer (and, behind proxies, the hops): the answers for the last
  // addresses seen are kept, as parsing and BlockList checks cost more than the rest of a lookup.
  const facts = memoized((address: string): AddressFacts | undefined => {
    const canonical = canonicalIp(address);
    if (canonical === undefined) return undefined;
    return {
      canonical,
      grouped: groupIp(canonical, subnet),
      trusted: trusted !== undefined && inIpRangeList(trusted, canonical),
    };
  });
  const isTrusted = (address: string): boolean =>
    typeof address === 'string' && facts(address)?.trusted === true;
  const resolve = (
    peerAddress: string | undefined,
    headerValue?: string | readonly string[],
  ): string | undefined => {
    const peer = typeof peerAddress === 'string' ? facts(peerAddress) : undefined;
    if (peer === undefined) return undefined;
    if (!peer.trusted || headerValue === undefined) return peer.grouped;
    const client =
      header === 'x-forwarded-for' || header === 'forwarded'
        ? walk(
            isTrusted,
            peer.canonical,
            header === 'forwarded' ? forwardedFor(headerValue) : hops(headerValue),
          )
        : singleValue(headerValue);
    if (client === undefined || OBFUSCATED.test(client)) return client;
    return facts(client)?.grouped ?? groupIp(client, subnet);
  };
  return Object.assign(resolve, { header, isTrusted });
}

/** What a resolver knows of one address. */
interface AddressFacts {
  /** The address in canonical form ({@link canonicalIp}). */
  readonly canonical: string;
  /** Grouped by the IPv6 subnet ({@link groupIp}). */
  readonly grouped: string;
  /** Whether it is one of the trusted proxies. */
  readonly trusted: boolean;
}

/**
 * A pure function of a string that remembers its answers for the last `max` strings asked (all
 * are forgotten when the table is full: memory stays bounded whatever clients send).
 */
function memoized<T>(fn: (text: string) => T, max = 1024): (text: string) => T {
  const answers = new Map<string, T>();
  return (text) => {
    if (answers.has(text)) return answers.get(text)!;
    const answer = fn(text);
    if (answers.size >= max) answers.clear();
    answers.set(text, answer);
    return answer;
  };
}

/** The client at the end of a chain: the first hop from the right that is not a trusted proxy. */
function walk(
  isTrusted: (address: string) => boolean,
  peer: string,
  chain: string[],
): string | undefined {
  let client = peer;
  while (chain.length > 0 && isTrusted(client)) {
    const hop = chain.pop()!;
    if (OBFUSCATED.test(hop)) return hop; // the proxy's own name for its client
    const address = hopAddress(hop);
    if (address === undefined) return undefined; // a trusted proxy wrote no address: no one
    client = address;
  }
  return client;
}

function singleValue(value: string | readonly string[]): string | undefined {
  const text = typeof value === 'string' ? value : value.length === 1 ? value[0]! : '';
  return hopAddress(text);
}

/**
 * The address in one hop: IPv4 or IPv6, optionally bracketed, optionally with a port
 * (`203.0.113.7:51234`, `[2001:db8::1]:443`); `undefined` when it is not one.
 */
function hopAddress(hop: string): string | undefined {
  const text = hop.trim();
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(text);
  if (bracketed)
    return isIP(stripZone(bracketed[1]!)) === 6 ? canonicalIp(bracketed[1]) : undefined;
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(text);
  return canonicalIp(v4WithPort ? v4WithPort[1] : text);
}

/**
 * Whether an address is loopback, private (RFC 1918, `fc00::/7`) or link-local: where a proxy in
 * front of the app usually sits.
 *
 * @example
 * isInternalAddress('10.1.2.3'); // true
 */
export function isInternalAddress(address: string): boolean {
  return typeof address === 'string' && isInternalText(address);
}

const INTERNAL = trustList(['loopback', 'private', 'linklocal'])!;

const isInternalText = memoized((address: string): boolean => {
  const canonical = canonicalIp(address);
  return canonical !== undefined && inIpRangeList(INTERNAL, canonical);
});

function trustList(entries: readonly string[]): BlockList | undefined {
  return ipRangeList(entries, 'clientIp.trustedProxies');
}

/** The hops of an X-Forwarded-For value, left to right (empty entries skipped). */
function hops(header: string | readonly string[]): string[] {
  const text = typeof header === 'string' ? header : header.join(',');
  return text
    .split(',')
    .map((hop) => hop.trim())
    .filter((hop) => hop !== '');
}

/**
 * The `for=` values of an RFC 7239 `Forwarded` value, left to right; an element without one
 * gives `unknown` (that proxy did not say who its client was).
 */
function forwardedFor(header: string | readonly string[]): string[] {
  const text = typeof header === 'string' ? header : header.join(',');
  const result: string[] = [];
  // Elements are separated by commas and pairs by semicolons, outside quoted strings.
  for (const element of splitOutsideQuotes(text, ',')) {
    if (element.trim() === '') continue;
    let value = 'unknown';
    for (const pair of splitOutsideQuotes(element, ';')) {
      const eq = pair.indexOf('=');
      if (eq < 0 || pair.slice(0, eq).trim().toLowerCase() !== 'for') continue;
      const raw = pair.slice(eq + 1).trim();
      value =
        raw.startsWith('"') && raw.endsWith('"') && raw.length >= 2
          ? raw.slice(1, -1).replace(/\\(.)/g, '$1')
          : raw;
    }
    result.push(value);
  }
  return result;
}

function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted && c === '\\' && i + 1 < text.length) {
      current += c + text[++i]!;
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === separator && !quoted) {
      parts.push(current);
      current = '';
    } else current += c;
  }
  parts.push(current);
  return parts;
}
