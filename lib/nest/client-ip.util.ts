import { BlockList, isIP, isIPv4 } from 'node:net';
import type { ClientIpOptions } from './redlimit-options.interface';

/** Finds the client of a request from its peer address and `X-Forwarded-For` header. */
export type ClientIpResolver = (
  peerAddress: string | undefined,
  forwardedFor: string | readonly string[] | undefined,
) => string;

/** Ranges behind the names accepted in `trustedProxies`. */
const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
};

/** The tracker of a request whose peer address is unknown (e.g. the socket already closed). */
export const UNKNOWN_CLIENT = 'unknown';

/**
 * Builds the client-IP resolver for module options: the peer address unless it is a trusted
 * proxy, in which case `X-Forwarded-For` is walked from the right past trusted proxies. IPv6
 * results are grouped by `ipv6Subnet` (default 64); IPv4-mapped IPv6 becomes IPv4.
 *
 * @throws TypeError naming a `trustedProxies` entry that is not an address, range or known name
 * @example
 * const clientIp = createClientIpResolver({ trustedProxies: ['loopback'] });
 * clientIp('127.0.0.1', '198.51.100.4, 10.0.0.2'); // '10.0.0.2' (10.0.0.2 is not trusted)
 * clientIp('2001:db8::7', undefined); // '2001:db8:0:0::/64'
 */
export function createClientIpResolver(options: ClientIpOptions = {}): ClientIpResolver {
  const subnet = options.ipv6Subnet ?? 64;
  if (!Number.isInteger(subnet) || subnet < 1 || subnet > 128) {
    throw new RangeError(`clientIp.ipv6Subnet must be a whole number from 1 to 128; got ${subnet}`);
  }
  const trusted = trustList(options.trustedProxies ?? []);
  return (peerAddress, forwardedFor) => {
    let client = canonicalIp(peerAddress);
    if (client === undefined) return UNKNOWN_CLIENT;
    if (trusted) {
      const chain = forwardedChain(forwardedFor);
      while (chain.length > 0 && isTrusted(trusted, client)) {
        const hop = canonicalIp(chain.pop());
        if (hop === undefined) break; // a proxy wrote garbage: keep the last hop we can name
        client = hop;
      }
    }
    return groupIp(client, subnet);
  };
}

/**
 * An address in canonical form: brackets and zone removed, IPv4-mapped IPv6 as IPv4, IPv6
 * expanded to eight groups. `undefined` when it is not an IP address.
 *
 * @example
 * canonicalIp('::ffff:203.0.113.9'); // '203.0.113.9'
 */
export function canonicalIp(address: string | undefined): string | undefined {
  if (typeof address !== 'string') return undefined;
  let text = address.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const family = isIP(text);
  if (family === 4) return text;
  if (family !== 6) return undefined;
  const groups = ipv6Groups(text);
  const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
  if (mapped) {
    const [hi = 0, lo = 0] = groups.slice(6);
    return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');
  }
  return groups.map((g) => g.toString(16)).join(':');
}

/**
 * An IPv6 address reduced to its `/subnet` network (`'2001:db8:0:0::/64'`); IPv4 unchanged.
 *
 * @example
 * groupIp('2001:db8::1', 64); // '2001:db8:0:0::/64'
 */
export function groupIp(address: string, subnet: number): string {
  if (isIPv4(address) || subnet >= 128) return address;
  const groups = ipv6Groups(address);
  const kept: string[] = [];
  for (let i = 0, bits = subnet; bits > 0; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    kept.push(((groups[i] ?? 0) & mask).toString(16));
  }
  return `${kept.join(':')}${kept.length < 8 ? '::' : ''}/${subnet}`;
}

/** The eight 16-bit groups of a valid IPv6 address (with `::` and a trailing dotted quad). */
function ipv6Groups(address: string): number[] {
  let text = address;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted[1].split('.').map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string): number[] =>
    part === '' ? [] : part.split(':').map((g) => parseInt(g, 16));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const zeros = new Array<number>(8 - left.length - right.length).fill(0);
  return [...left, ...zeros, ...right];
}

function trustList(entries: readonly string[]): BlockList | undefined {
  const given: unknown = entries; // narrowing the typed parameter would widen it to any[]
  if (!Array.isArray(given)) {
    throw new TypeError('clientIp.trustedProxies must be an array of addresses, ranges or names');
  }
  if (entries.length === 0) return undefined;
  const list = new BlockList();
  for (const entry of entries) {
    for (const range of NAMED_RANGES[entry] ?? [entry]) addRange(list, range, entry);
  }
  return list;
}

function addRange(list: BlockList, range: string, entry: string): void {
  const [address = '', bits, extra] = String(range).split('/');
  const canonical = canonicalIp(address);
  const family = canonical === undefined ? 0 : isIP(canonical);
  const max = family === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : Number(bits);
  if (
    !canonical ||
    extra !== undefined ||
    !Number.isInteger(prefix) ||
    prefix < 0 ||
    prefix > max
  ) {
    throw new TypeError(
      `clientIp.trustedProxies: '${entry}' is not an IP address, a CIDR range ` +
        `or one of ${Object.keys(NAMED_RANGES).join(', ')}`,
    );
  }
  list.addSubnet(canonical, prefix, family === 4 ? 'ipv4' : 'ipv6');
}

function isTrusted(list: BlockList, address: string): boolean {
  return list.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
}

function forwardedChain(header: string | readonly string[] | undefined): string[] {
  if (header === undefined) return [];
  const text = typeof header === 'string' ? header : header.join(',');
  return text
    .split(',')
    .map((hop) => hop.trim())
    .filter((hop) => hop !== '');
}
