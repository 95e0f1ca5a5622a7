import type { BlockList } from 'node:net';
import {
  forwardedElements,
  forwardedForHops,
  forwardedNode,
  hopAddress,
  isObfuscated,
  singleAddress,
  UNIX_SOCKET_PEER,
} from './client-ip-header.util';
import { checkUnknownOptions } from '../core/options.util';
import { canonicalIp, groupIp } from './ip-address.util';
import { inIpRangeList, ipRangeList } from './ip-range.util';
import type { ClientIpHeader, ClientIpOptions } from './http-options.types';

export { canonicalIp, groupIp } from './ip-address.util';

/**
 * Finds the client of a request from its peer address and the value of the configured client-IP
 * header ({@link ClientIpResolver.header}); `undefined` when the client cannot be named (no peer
 * address, a header that does not parse, or a trusted proxy wrote something that is not an
 * address). The peer `'unix'` is a Unix domain socket's (trusted when `trustedProxies` names
 * `'unix'`). IPv6 clients come back grouped by the configured subnet.
 */
export interface ClientIpResolver {
  (peerAddress: string | undefined, headerValue?: string | readonly string[]): string | undefined;
  /** The request header the resolver reads from trusted proxies (lower case). */
  readonly header: ClientIpHeader;
  /** Whether an address (or `'unix'`, a Unix socket's peer) is one of the trusted proxies. */
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

const OPTION_KEYS: ReadonlySet<string> = new Set([
  'trustedProxies',
  'trustedHops',
  'ipv6Subnet',
  'header',
]);

/**
 * The tracker of a call whose transport has no client address at all (a microservice over Redis
 * or NATS): one budget per handler. HTTP requests whose peer address cannot be read are refused
 * instead (see `RedlimitHttp.clientIp`).
 */
export const UNKNOWN_CLIENT = 'unknown';

/**
 * Builds the client-IP resolver for module options. The client is the peer address, unless the
 * peer is a trusted proxy:
 *
 * - `header: 'x-forwarded-for'` (default): the chain is walked from the right past trusted proxies
 *   (at most `trustedHops` of them, the peer included, when set); the first hop that is not one is
 *   the client. Hops may carry a port (`203.0.113.7:51234`, `[2001:db8::1]:443`). A hop that a
 *   trusted proxy wrote and that is not an address (`unknown`, `010.0.0.1` — an IPv4 part with a
 *   leading zero is not an address, since some parsers read it as octal) names no one:
 *   `undefined`.
 * - `header: 'forwarded'`: RFC 7239, the `for=` of each element, walked the same way; quoted and
 *   bracketed IPv6 with a port, obfuscated identifiers (`for=_hidden`, which name the client as
 *   they are); `for=unknown` or an element without `for=` names no one, and so does a value that
 *   does not parse under RFC 7239's grammar (an unclosed quote, a repeated parameter, …).
 * - `'cf-connecting-ip'`, `'true-client-ip'`, `'fly-client-ip'`, `'x-real-ip'`: one address, the
 *   client (a port is dropped); absent → the peer itself.
 *
 * IPv6 results are grouped by `ipv6Subnet` (default 64); IPv4-mapped IPv6 becomes IPv4.
 *
 * @throws TypeError naming a `trustedProxies` entry that is not an address, range, known name or
 *   `'unix'`, an unknown `header`, a `header` or `trustedHops` without `trustedProxies`,
 *   `trustedHops` with a single-address header, or an unknown option
 * @throws RangeError naming `ipv6Subnet` or `trustedHops` when it is not a whole number in range
 * @example
 * const clientIp = createClientIpResolver({ trustedProxies: ['loopback'] });
 * clientIp('127.0.0.1', '198.51.100.4, 10.0.0.2'); // '10.0.0.2' (10.0.0.2 is not trusted)
 * clientIp('127.0.0.1', '198.51.100.4:51234'); // '198.51.100.4'
 * clientIp('2001:db8::7'); // '2001:db8:0:0::/64'
 */
export function createClientIpResolver(options: ClientIpOptions = {}): ClientIpResolver {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(
      'clientIp must be an object: { trustedProxies?, trustedHops?, ipv6Subnet?, header? }',
    );
  }
  checkUnknownOptions(
    options,
    OPTION_KEYS,
    'clientIp',
    'expected trustedProxies, trustedHops, ipv6Subnet, header',
  );
  const subnet = options.ipv6Subnet ?? 64;
  if (!Number.isInteger(subnet) || subnet < 1 || subnet > 128) {
    throw new RangeError(`clientIp.ipv6Subnet must be a whole number from 1 to 128; got ${subnet}`);
  }
  const proxies = options.trustedProxies ?? [];
  const trusted = trustList(proxies);
  const trustUnix = Array.isArray(proxies) && proxies.includes(UNIX_SOCKET_PEER);
  const anyTrusted = trusted !== undefined || trustUnix;
  const header = options.header ?? 'x-forwarded-for';
  if (!CLIENT_IP_HEADERS.includes(header)) {
    throw new TypeError(
      `clientIp.header must be one of ${CLIENT_IP_HEADERS.map((h) => `'${h}'`).join(', ')}; ` +
        `got ${JSON.stringify(header)}`,
    );
  }
  if (options.header !== undefined && !anyTrusted) {
    throw new TypeError(
      `clientIp.header '${header}' is believed only from trusted proxies: set ` +
        'clientIp.trustedProxies to the addresses of the proxies that write it',
    );
  }
  const chained = header === 'x-forwarded-for' || header === 'forwarded';
  const maxHops = trustedHops(options.trustedHops, anyTrusted, chained, header);
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
    typeof address === 'string' &&
    (address === UNIX_SOCKET_PEER ? trustUnix : facts(address)?.trusted === true);
  const resolve = (
    peerAddress: string | undefined,
    headerValue?: string | readonly string[],
  ): string | undefined => {
    if (typeof peerAddress !== 'string') return undefined;
    const unix = peerAddress === UNIX_SOCKET_PEER;
    const peer = unix ? undefined : facts(peerAddress);
    if (!unix && peer === undefined) return undefined;
    if (!isTrusted(peerAddress)) return peer?.grouped; // an untrusted Unix peer: no one
    if (headerValue === undefined) return peer?.grouped; // a trusted Unix peer said nothing
    let client: string | undefined;
    if (header === 'forwarded') {
      const elements = forwardedElements(headerValue);
      client = elements && walk(isTrusted, peerAddress, elements, forwardedNode, maxHops);
    } else if (chained) {
      client = walk(isTrusted, peerAddress, forwardedForHops(headerValue), hopAddress, maxHops);
    } else {
      client = singleAddress(headerValue);
    }
    if (client === undefined || isObfuscated(client)) return client;
    if (client === UNIX_SOCKET_PEER) return undefined; // the chain ended at the socket
    return facts(client)?.grouped ?? groupIp(client, subnet);
  };
  return Object.assign(resolve, { header, isTrusted });
}

/**
 * `clientIp.trustedHops` checked: a whole number ≥ 1 counting hops through `trustedProxies`, for
 * a header that carries a chain; `Infinity` when unset.
 */
function trustedHops(
  value: unknown,
  anyTrusted: boolean,
  chained: boolean,
  header: ClientIpHeader,
): number {
  if (value === undefined) return Infinity;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(
      'clientIp.trustedHops must be a whole number ≥ 1 (how many proxies are in front of the ' +
        `app, the one that connects to it included); got ${typeof value === 'number' ? String(value) : JSON.stringify(value)}`,
    );
  }
  if (!anyTrusted) {
    throw new TypeError(
      'clientIp.trustedHops counts hops through clientIp.trustedProxies: set trustedProxies to ' +
        'the addresses of those proxies too',
    );
  }
  if (!chained) {
    throw new TypeError(
      "clientIp.trustedHops applies to 'x-forwarded-for' and 'forwarded', which carry a chain of " +
        `hops; '${header}' names the client in one address`,
    );
  }
  return value;
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

/**
 * The client at the end of a chain: walking from the right past trusted proxies, at most
 * `maxHops` of them (the peer is the first), the first hop that is not one; `undefined` when a
 * hop the walk reaches names no address (`null`: an element without one).
 */
function walk(
  isTrusted: (address: string) => boolean,
  peer: string,
  chain: Array<string | null>,
  read: (hop: string) => string | undefined,
  maxHops: number,
): string | undefined {
  let client = peer;
  for (let walked = 0; walked < maxHops && chain.length > 0 && isTrusted(client); walked++) {
    const hop = chain.pop()!;
    const address = hop === null ? undefined : read(hop);
    if (address === undefined) return undefined; // a trusted proxy wrote no address: no one
    if (isObfuscated(address)) return address; // the proxy's own name for its client
    client = address;
  }
  return client;
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
  const given: unknown = entries;
  const addresses = Array.isArray(given)
    ? entries.filter((entry) => entry !== UNIX_SOCKET_PEER)
    : entries;
  return ipRangeList(addresses, 'clientIp.trustedProxies', [UNIX_SOCKET_PEER]);
}
